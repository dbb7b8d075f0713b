// Runs Apache Kafka's own assignors on the cases Lagwatch's ports are tested with
// (tests/dashboard/test_assignors_against_kafka.py): JSON cases on stdin, JSON answers out.
//
// Client side: RangeAssignor, RoundRobinAssignor and AbstractStickyAssignor (the final
// assignment of sticky and cooperative-sticky: every member's owned partitions at generation 1).
// Broker side: the group coordinator's UniformAssignor and RangeAssignor, fed as
// TargetAssignmentBuilder feeds them (members in a default HashMap filled in the case's order).
// Topic ids are Uuid(0, 2 + i) for the topics in name order, so that their hash and compareTo
// orders are the name order Lagwatch uses in their place.
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.*;
import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor.Subscription;
import org.apache.kafka.clients.consumer.RangeAssignor;
import org.apache.kafka.clients.consumer.RoundRobinAssignor;
import org.apache.kafka.clients.consumer.internals.AbstractPartitionAssignor;
import org.apache.kafka.clients.consumer.internals.AbstractStickyAssignor;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.coordinator.group.api.assignor.ConsumerGroupPartitionAssignor;
import org.apache.kafka.coordinator.group.api.assignor.GroupAssignment;
import org.apache.kafka.coordinator.group.api.assignor.MemberAssignment;
import org.apache.kafka.coordinator.group.api.assignor.SubscribedTopicDescriber;
import org.apache.kafka.coordinator.group.api.assignor.SubscriptionType;
import org.apache.kafka.coordinator.group.assignor.UniformAssignor;
import org.apache.kafka.coordinator.group.modern.Assignment;
import org.apache.kafka.coordinator.group.modern.GroupSpecImpl;
import org.apache.kafka.coordinator.group.modern.MemberSubscriptionAndAssignmentImpl;

public class AssignorOracle {
    static final class Sticky extends AbstractStickyAssignor {
        @Override
        protected MemberData memberData(Subscription subscription) {
            return new MemberData(subscription.ownedPartitions(), Optional.of(1));
        }

        @Override
        public String name() {
            return "oracle-sticky";
        }
    }

    public static void main(String[] args) throws Exception {
        // Kafka's assignors log (to stdout by default): the answer alone goes to stdout.
        java.io.PrintStream answer = new java.io.PrintStream(
            new java.io.FileOutputStream(java.io.FileDescriptor.out), true, "UTF-8");
        System.setOut(System.err);
        ObjectMapper json = new ObjectMapper();
        JsonNode cases = json.readTree(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        ArrayNode out = json.createArrayNode();
        for (JsonNode c : cases) {
            ObjectNode answers = json.createObjectNode();
            for (JsonNode name : c.get("assignors")) {
                Map<String, List<TopicPartition>> result;
                try {
                    result = run(name.asText(), c);
                } catch (Exception e) {
                    answers.put(name.asText(), "error: " + e);
                    continue;
                }
                ObjectNode members = json.createObjectNode();
                for (Map.Entry<String, List<TopicPartition>> e : result.entrySet()) {
                    ArrayNode tps = json.createArrayNode();
                    for (TopicPartition tp : e.getValue())
                        tps.add(json.createArrayNode().add(tp.topic()).add(tp.partition()));
                    members.set(e.getKey(), tps);
                }
                answers.set(name.asText(), members);
            }
            out.add(answers);
        }
        answer.println(json.writeValueAsString(out));
    }

    static Map<String, List<TopicPartition>> run(String name, JsonNode c) {
        switch (name) {
            case "range": return client(new RangeAssignor(), c);
            case "roundrobin": return client(new RoundRobinAssignor(), c);
            case "sticky": return client(new Sticky(), c);
            case "uniform": return server(new UniformAssignor(), c);
            case "server-range":
                return server(new org.apache.kafka.coordinator.group.assignor.RangeAssignor(), c);
            default: throw new IllegalArgumentException(name);
        }
    }

    static List<String> topics(JsonNode member) {
        List<String> topics = new ArrayList<>();
        member.get("topics").forEach(t -> topics.add(t.asText()));
        return topics;
    }

    static List<TopicPartition> owned(JsonNode member) {
        List<TopicPartition> owned = new ArrayList<>();
        member.get("owned").forEach(tp -> owned.add(new TopicPartition(tp.get(0).asText(), tp.get(1).asInt())));
        return owned;
    }

    static Optional<String> instance(JsonNode member) {
        JsonNode id = member.get("instance");
        return id == null || id.isNull() ? Optional.empty() : Optional.of(id.asText());
    }

    static Map<String, List<TopicPartition>> client(AbstractPartitionAssignor assignor, JsonNode c) {
        Map<String, Subscription> subscriptions = new HashMap<>();  // as ConsumerCoordinator builds it
        Set<String> subscribed = new HashSet<>();
        for (JsonNode m : c.get("members")) {
            Subscription s = new Subscription(topics(m), null, owned(m), 1, Optional.empty());
            s.setGroupInstanceId(instance(m));
            subscriptions.put(m.get("id").asText(), s);
            subscribed.addAll(topics(m));
        }
        Map<String, Integer> partitionsPerTopic = new HashMap<>();
        c.get("partitions").fields().forEachRemaining(e -> {
            if (subscribed.contains(e.getKey()) && e.getValue().asInt() > 0)
                partitionsPerTopic.put(e.getKey(), e.getValue().asInt());
        });
        return assignor.assign(partitionsPerTopic, subscriptions);
    }

    static Map<String, List<TopicPartition>> server(ConsumerGroupPartitionAssignor assignor, JsonNode c) {
        List<String> names = new ArrayList<>();
        c.get("partitions").fieldNames().forEachRemaining(names::add);
        Collections.sort(names);
        Map<String, Uuid> ids = new HashMap<>();
        Map<Uuid, String> byId = new HashMap<>();
        Map<Uuid, Integer> counts = new HashMap<>();
        for (int i = 0; i < names.size(); i++) {
            int n = c.get("partitions").get(names.get(i)).asInt();
            if (n <= 0) continue;
            Uuid id = new Uuid(0, 2 + i);
            ids.put(names.get(i), id);
            byId.put(id, names.get(i));
            counts.put(id, n);
        }
        Map<String, MemberSubscriptionAndAssignmentImpl> members = new HashMap<>();
        Map<Uuid, Map<Integer, String>> inverted = new HashMap<>();
        Set<Set<String>> subscriptions = new HashSet<>();
        for (JsonNode m : c.get("members")) {
            String memberId = m.get("id").asText();
            Set<Uuid> topicIds = new HashSet<>();
            for (String t : topics(m)) if (ids.containsKey(t)) topicIds.add(ids.get(t));
            subscriptions.add(new HashSet<>(topics(m)));
            Map<Uuid, List<Integer>> target = new TreeMap<>();
            for (TopicPartition tp : owned(m)) {
                Uuid id = ids.get(tp.topic());
                if (id == null || tp.partition() >= counts.get(id)) continue;
                target.computeIfAbsent(id, k -> new ArrayList<>()).add(tp.partition());
            }
            Map<Uuid, Set<Integer>> assignment = new HashMap<>();
            target.forEach((id, ps) -> {
                Collections.sort(ps);
                assignment.put(id, Collections.unmodifiableSet(new HashSet<>(ps)));
                for (int p : ps) inverted.computeIfAbsent(id, k -> new HashMap<>()).put(p, memberId);
            });
            members.put(memberId, new MemberSubscriptionAndAssignmentImpl(
                Optional.empty(), instance(m), topicIds, new Assignment(assignment)));
        }
        SubscriptionType type = subscriptions.size() <= 1 ? SubscriptionType.HOMOGENEOUS : SubscriptionType.HETEROGENEOUS;
        SubscribedTopicDescriber describer = new SubscribedTopicDescriber() {
            public int numPartitions(Uuid topicId) { return counts.getOrDefault(topicId, -1); }
            public Set<String> racksForPartition(Uuid topicId, int partition) { return Collections.emptySet(); }
        };
        GroupAssignment result = assignor.assign(
            new GroupSpecImpl(Collections.unmodifiableMap(members), type, inverted), describer);
        Map<String, List<TopicPartition>> out = new HashMap<>();
        for (JsonNode m : c.get("members")) out.put(m.get("id").asText(), new ArrayList<>());
        result.members().forEach((memberId, assignment) -> {
            MemberAssignment a = assignment;
            a.partitions().forEach((id, ps) -> ps.forEach(p -> out.get(memberId).add(new TopicPartition(byId.get(id), p))));
        });
        return out;
    }
}
