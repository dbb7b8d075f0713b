// The lab's Storm topology: one storm-kafka KafkaSpout (offsets committed to ZooKeeper under
// <zkRoot>/<spout id>/partition_<N>, docs/DOMAIN.md §1) feeding one bolt that acks, fails or
// sleeps as its control file says. Built by lab/storm/dist.py (javac against the Storm jars it
// fetched), submitted by lab/storm/cluster.py; a stand-in for a user's topology, not product code.
//
//   java -cp <storm lib>/*:<conf>:lab-topology.jar -Dstorm.jar=lab-topology.jar LabTopology \
//     --name NAME --topic TOPIC --zk-root ROOT --spout-id ID --kafka-zk HOST:PORT/CHROOT \
//     --control FILE [--max-pending N] [--commit-ms MS] [--timeout-s S]
//
// The control file (key=value lines, re-read at most every 500 ms by each bolt task):
//   sleep_ms=N      sleep N ms per tuple before deciding (a slow bolt: back-pressure)
//   fail_all=true   fail every tuple
//   ack_poison=true ack records whose value starts with POISON (otherwise always failed: the
//                   spout retries such a record for ever, its partition's commit frozen on it)

import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.HashMap;
import java.util.Map;
import org.apache.storm.Config;
import org.apache.storm.StormSubmitter;
import org.apache.storm.kafka.KafkaSpout;
import org.apache.storm.kafka.MessageMetadataSchemeAsMultiScheme;
import org.apache.storm.kafka.SpoutConfig;
import org.apache.storm.kafka.StringMessageAndMetadataScheme;
import org.apache.storm.kafka.ZkHosts;
import org.apache.storm.task.OutputCollector;
import org.apache.storm.task.TopologyContext;
import org.apache.storm.topology.OutputFieldsDeclarer;
import org.apache.storm.topology.TopologyBuilder;
import org.apache.storm.topology.base.BaseRichBolt;
import org.apache.storm.tuple.Tuple;

public class LabTopology {
    public static class LabBolt extends BaseRichBolt {
        private OutputCollector out;
        private String control;
        private long readAt;
        private long sleepMs;
        private boolean failAll;
        private boolean ackPoison;

        @Override
        public void prepare(Map conf, TopologyContext context, OutputCollector out) {
            this.out = out;
            this.control = (String) conf.get("lab.control.file");
        }

        private void reload() {
            long now = System.currentTimeMillis();
            if (now - readAt < 500) {
                return;
            }
            readAt = now;
            long sleep = 0;
            boolean all = false;
            boolean poison = false;
            try {
                for (String line : Files.readAllLines(new File(control).toPath(), StandardCharsets.UTF_8)) {
                    String[] kv = line.trim().split("=", 2);
                    if (kv.length != 2) {
                        continue;
                    }
                    String key = kv[0].trim();
                    String value = kv[1].trim();
                    if (key.equals("sleep_ms")) {
                        sleep = Long.parseLong(value);
                    } else if (key.equals("fail_all")) {
                        all = value.equals("true");
                    } else if (key.equals("ack_poison")) {
                        poison = value.equals("true");
                    }
                }
            } catch (Exception e) {
                // No control file (or one being rewritten): the defaults, ack everything.
            }
            sleepMs = sleep;
            failAll = all;
            ackPoison = poison;
        }

        @Override
        public void execute(Tuple tuple) {
            reload();
            if (sleepMs > 0) {
                try {
                    Thread.sleep(sleepMs);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
            String value = tuple.getString(0);
            boolean poison = value != null && value.startsWith("POISON") && !ackPoison;
            if (failAll || poison) {
                out.fail(tuple);
            } else {
                out.ack(tuple);
            }
        }

        @Override
        public void declareOutputFields(OutputFieldsDeclarer declarer) {
        }
    }

    public static void main(String[] args) throws Exception {
        Map<String, String> a = new HashMap<>();
        for (int i = 0; i + 1 < args.length; i += 2) {
            a.put(args[i].replaceFirst("^--", ""), args[i + 1]);
        }
        String spoutId = a.get("spout-id");
        SpoutConfig spout = new SpoutConfig(new ZkHosts(a.get("kafka-zk")), a.get("topic"), a.get("zk-root"), spoutId);
        spout.scheme = new MessageMetadataSchemeAsMultiScheme(new StringMessageAndMetadataScheme());
        spout.stateUpdateIntervalMs = Long.parseLong(a.getOrDefault("commit-ms", "2000"));
        // storm-kafka's defaults retry a failed tuple at once and for ever (initial delay 0,
        // multiplier 1): a poison record would spin a core. A short back-off, as users set.
        spout.retryInitialDelayMs = 100;
        spout.retryDelayMultiplier = 2.0;
        spout.retryDelayMaxMs = 2000;
        TopologyBuilder builder = new TopologyBuilder();
        builder.setSpout(spoutId, new KafkaSpout(spout), 1);
        builder.setBolt("process", new LabBolt(), 1).shuffleGrouping(spoutId);
        Config conf = new Config();
        conf.put("lab.control.file", a.get("control"));
        conf.setNumWorkers(1);
        conf.setNumAckers(1);
        conf.setMaxSpoutPending(Integer.parseInt(a.getOrDefault("max-pending", "1000")));
        conf.setMessageTimeoutSecs(Integer.parseInt(a.getOrDefault("timeout-s", "30")));
        // Exact counts in the UI (the default samples 5 % of tuples and scales up).
        conf.put(Config.TOPOLOGY_STATS_SAMPLE_RATE, 1.0);
        StormSubmitter.submitTopology(a.get("name"), conf, builder.createTopology());
    }
}
