// The lab's Storm 2 topology: one storm-kafka-client KafkaSpout (an ordinary Kafka consumer
// that commits its offsets to Kafka, with commit metadata naming the topology instance) feeding
// one bolt that acks every tuple, in a LocalCluster (Nimbus, a supervisor and its worker in
// this one JVM) on the lab's ZooKeeper. Built by lab/storm2/dist.py (javac against the jars it
// fetched), run by lab/storm2/world.py; a stand-in for a user's topology, not product code.
//
//   java -cp <storm2 lib>/*:storm2-topology.jar Storm2Topology --name NAME --bootstrap HOST:PORT
//     --topic TOPIC --group GROUP --zookeeper HOST:PORT --zk-root /ROOT [--commit-ms MS]
//     [--spout-tasks N]
//
// Prints "storm2 topology: running <topology id>" once the topology is submitted; runs until its
// standard input closes (its parent gone) or it is asked to stop (SIGTERM).

import java.io.InputStream;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.storm.Config;
import org.apache.storm.LocalCluster;
import org.apache.storm.kafka.spout.FirstPollOffsetStrategy;
import org.apache.storm.kafka.spout.KafkaSpout;
import org.apache.storm.kafka.spout.KafkaSpoutConfig;
import org.apache.storm.task.OutputCollector;
import org.apache.storm.task.TopologyContext;
import org.apache.storm.topology.OutputFieldsDeclarer;
import org.apache.storm.topology.TopologyBuilder;
import org.apache.storm.topology.base.BaseRichBolt;
import org.apache.storm.tuple.Tuple;

public class Storm2Topology {
    public static class AckBolt extends BaseRichBolt {
        private OutputCollector out;

        @Override
        public void prepare(Map<String, Object> conf, TopologyContext context, OutputCollector out) {
            this.out = out;
        }

        @Override
        public void execute(Tuple tuple) {
            out.ack(tuple);
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
        String name = a.get("name");
        String[] zk = a.get("zookeeper").split(":");

        KafkaSpoutConfig<String, String> spoutConfig = KafkaSpoutConfig
            .builder(a.get("bootstrap"), a.get("topic"))
            .setProp(ConsumerConfig.GROUP_ID_CONFIG, a.get("group"))
            .setProp(ConsumerConfig.CLIENT_ID_CONFIG, a.get("group"))
            .setFirstPollOffsetStrategy(FirstPollOffsetStrategy.UNCOMMITTED_EARLIEST)
            .setOffsetCommitPeriodMs(Long.parseLong(a.getOrDefault("commit-ms", "2000")))
            .build();
        int spoutTasks = Integer.parseInt(a.getOrDefault("spout-tasks", "2"));
        TopologyBuilder builder = new TopologyBuilder();
        builder.setSpout("kafka-spout", new KafkaSpout<>(spoutConfig), spoutTasks);
        builder.setBolt("ack-bolt", new AckBolt(), 1).shuffleGrouping("kafka-spout");

        Map<String, Object> daemon = new HashMap<>();
        daemon.put(Config.STORM_ZOOKEEPER_SERVERS, Arrays.asList(zk[0]));
        daemon.put(Config.STORM_ZOOKEEPER_PORT, Integer.parseInt(zk[1]));
        daemon.put(Config.STORM_ZOOKEEPER_ROOT, a.get("zk-root"));
        Config conf = new Config();
        conf.setNumWorkers(1);
        conf.setMaxSpoutPending(1000);

        CountDownLatch stop = new CountDownLatch(1);
        Thread watcher = new Thread(() -> {
            try {
                InputStream in = System.in;
                while (in.read() >= 0) {
                    // nothing is ever written: only the end of the stream matters
                }
            } catch (Exception e) {
                // a closed stream is the end too
            }
            stop.countDown();
        }, "stdin-watcher");
        watcher.setDaemon(true);
        watcher.start();
        // SIGTERM: the main thread closes the LocalCluster (its temporary folders go with it)
        // while the JVM waits here, a bounded time.
        CountDownLatch closed = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            stop.countDown();
            try {
                closed.await(15, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }, "stop"));

        try (LocalCluster cluster = new LocalCluster.Builder().withDaemonConf(daemon).build()) {
            cluster.submitTopology(name, conf, builder.createTopology());
            String id = cluster.getTopologySummaryByName(name).get_id();
            System.out.println("storm2 topology: running " + id);
            System.out.flush();
            stop.await();
        } finally {
            closed.countDown();
        }
        System.exit(0);
    }
}
