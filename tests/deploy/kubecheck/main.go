// kubecheck reads Kubernetes manifests (a `helm template` output) on standard input and decodes
// each document strictly into its Kubernetes type, as client-go's scheme knows it: an unknown or
// misspelt field, a duplicate field, a value of the wrong type or an unknown kind is an error,
// which neither `helm lint` nor YAML parsing reports. It prints one line per document and exits 1
// when any failed. Used by tests/deploy/test_helm_chart.py (built once, like helm).
package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"

	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes/scheme"
)

func main() {
	decoder := serializer.NewCodecFactory(scheme.Scheme, serializer.EnableStrict).UniversalDeserializer()
	reader := utilyaml.NewYAMLReader(bufio.NewReader(os.Stdin))
	failed := false
	for {
		doc, err := reader.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			fmt.Printf("read: %v\n", err)
			os.Exit(2)
		}
		if len(bytes.TrimSpace(stripComments(doc))) == 0 {
			continue
		}
		_, kind, err := decoder.Decode(doc, nil, nil)
		if err != nil {
			failed = true
			fmt.Printf("FAIL %v\n", err)
			continue
		}
		fmt.Printf("ok %s\n", kind.Kind)
	}
	if failed {
		os.Exit(1)
	}
}

// stripComments drops whole-line comments, so that a document of comments only is skipped.
func stripComments(doc []byte) []byte {
	var out bytes.Buffer
	for _, line := range bytes.Split(doc, []byte("\n")) {
		if trimmed := bytes.TrimSpace(line); len(trimmed) > 0 && trimmed[0] != '#' {
			out.Write(line)
			out.WriteByte('\n')
		}
	}
	return out.Bytes()
}
