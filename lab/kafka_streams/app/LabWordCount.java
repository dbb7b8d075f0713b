// The lab's Kafka Streams application (not part of the product): a word count whose topology
// has two subtopologies, so that a streams group (KIP-1071) shows what Kafka Streams adds to a
// consumer group: subtopology 0 reads the input topic and writes the repartition topic that
// subtopology 1 reads, counting into a state store with its changelog topic. It joins its
// group with the "streams" rebalance protocol (group.protocol=streams), so the broker assigns
// its tasks. Built by lab/kafka_streams/dist.py (javac against the jars it fetches); run by
// lab/kafka_streams/app.py, which pauses, resumes and stops it through its standard input.
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;

import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;

public final class LabWordCount {
    private LabWordCount() {}

    private static Map<String, String> options(String[] args) {
        Map<String, String> out = new HashMap<>();
        for (int i = 0; i + 1 < args.length; i += 2) {
            out.put(args[i].replaceFirst("^--", ""), args[i + 1]);
        }
        return out;
    }

    public static void main(String[] args) throws Exception {
        Map<String, String> o = options(args);
        Properties props = new Properties();
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, o.get("application-id"));
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, o.get("bootstrap"));
        props.put(StreamsConfig.GROUP_PROTOCOL_CONFIG, "streams");
        props.put(StreamsConfig.STATE_DIR_CONFIG, o.get("state-dir"));
        props.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, o.getOrDefault("commit-ms", "1000"));
        props.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, o.getOrDefault("threads", "1"));
        props.put(StreamsConfig.REPLICATION_FACTOR_CONFIG, 1);
        props.put(StreamsConfig.CLIENT_ID_CONFIG, o.getOrDefault("client-id", o.get("application-id")));
        props.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        props.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        props.put("consumer.auto.offset.reset", "earliest");

        StreamsBuilder builder = new StreamsBuilder();
        builder.<String, String>stream(o.get("input"))
            .flatMapValues(line -> Arrays.asList(line.toLowerCase().split("\\W+")))
            .filter((key, word) -> !word.isEmpty())
            .groupBy((key, word) -> word)
            .count(Materialized.as("counts"))
            .toStream()
            .to(o.get("output"), Produced.with(Serdes.String(), Serdes.Long()));

        KafkaStreams streams = new KafkaStreams(builder.build(), props);
        CountDownLatch done = new CountDownLatch(1);
        streams.setStateListener((now, before) -> {
            System.out.println("lab-wordcount state " + before + " -> " + now);
            if (now == KafkaStreams.State.ERROR || now == KafkaStreams.State.NOT_RUNNING) {
                done.countDown();
            }
        });
        Runtime.getRuntime().addShutdownHook(new Thread(() -> streams.close()));
        // Commands on standard input: "pause" stops processing (the member stays in its
        // group, heartbeating, and commits nothing new), "resume" goes on; closed (the lab
        // stopped it, or died): stop too.
        Thread watch = new Thread(() -> {
            try (BufferedReader in = new BufferedReader(new InputStreamReader(System.in))) {
                String line;
                while ((line = in.readLine()) != null) {
                    if (line.trim().equals("pause")) {
                        streams.pause();
                        System.out.println("lab-wordcount paused");
                    } else if (line.trim().equals("resume")) {
                        streams.resume();
                        System.out.println("lab-wordcount resumed");
                    }
                }
            } catch (Exception ignored) { }
            done.countDown();
        }, "stdin-watch");
        watch.setDaemon(true);
        watch.start();
        streams.start();
        done.await();
        streams.close();
        System.exit(streams.state() == KafkaStreams.State.ERROR ? 1 : 0);
    }
}
