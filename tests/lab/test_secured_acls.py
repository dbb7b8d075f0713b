"""Least privilege against the secured lab broker's StandardAuthorizer: the ``lagwatch``
principal holds only the grants docs/SECURITY.md lists (lab/secured_kafka.py,
``MONITOR_ACLS``). Every figure comes with them (tests/lab/test_secured_kafka.py reads them
all over each listener); nothing that writes is allowed; and a group or a topic the principal
may not describe is a warning on the sources page naming it, with every other group still
collected. Marked ``secured``: run by ``scripts/test-secured``.
"""

from __future__ import annotations

import uuid

import pytest
from confluent_kafka import ConsumerGroupTopicPartitions, KafkaException, TopicPartition
from confluent_kafka.admin import (
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    NewTopic,
    ResourcePatternType,
    ResourceType,
)
from django.test import Client
from django.urls import reverse

from dashboard.monitoring.models import Cluster, CollectionError, ConsumerGroup, PartitionState
from dashboard.store.cycle import run_cluster_cycle
from lab.kafka_tools import run_tool
from lab.secured_kafka import ACL_COMMAND, MONITOR, OAUTH_MONITOR, admin_bootstrap, client_config
from lab.services import Context
from tests.collectors.test_kafka_source import alter_offsets, create_topic, produce
from tests.lab.secured_world import Groups
from tests.roles import user_with_role

pytestmark = [pytest.mark.lab, pytest.mark.secured, pytest.mark.django_db(transaction=True)]


def deny(ctx: Context, resource: str, name: str) -> None:
    run_tool(ACL_COMMAND, ["--bootstrap-server", admin_bootstrap(ctx), "--add",
                           "--deny-principal", f"User:{MONITOR}", "--operation", "Describe",
                           f"--{resource}", name])  # fmt: skip


# docs/SECURITY.md's grants, as the broker lists them (the cluster is resource type BROKER).
GRANTS = {
    ("BROKER", "kafka-cluster", "DESCRIBE"),
    ("TOPIC", "*", "DESCRIBE"),
    ("TOPIC", "*", "DESCRIBE_CONFIGS"),
    ("GROUP", "*", "DESCRIBE"),
    ("GROUP", "*", "DESCRIBE_CONFIGS"),
    ("TOPIC", "__consumer_offsets", "READ"),
    ("TOPIC", "__share_group_state", "READ"),
}


@pytest.mark.parametrize("principal", [MONITOR, OAUTH_MONITOR])
def test_the_monitor_holds_exactly_the_documented_grants(
    secured_admin: AdminClient, principal: str
) -> None:
    """What lab/secured_kafka.py granted with kafka-acls.sh's arguments, read back: these
    grants and no other allow the figures tests/lab/test_secured_kafka.py reads."""
    wanted = AclBindingFilter(
        ResourceType.ANY, None, ResourcePatternType.ANY, f"User:{principal}", None,
        AclOperation.ANY, AclPermissionType.ALLOW,
    )  # fmt: skip
    bindings = secured_admin.describe_acls(wanted).result(20)
    assert {(b.restype.name, b.name, b.operation.name) for b in bindings} == GRANTS
    assert {b.resource_pattern_type.name for b in bindings} == {"LITERAL"}


def test_the_monitor_may_not_write(secured_ctx: Context, secured_groups: Groups) -> None:
    """No commit, no topic, no ACL: the grants are read-only."""
    config = client_config(secured_ctx, "SASL_SSL")
    admin = AdminClient(config)
    group = f"sec-write-{uuid.uuid4().hex[:8]}"
    request = [ConsumerGroupTopicPartitions(group, [TopicPartition(secured_groups.topic, 0, 1)])]
    try:
        answer = admin.alter_consumer_group_offsets(request)[group].result(20)
    except KafkaException as exc:  # refused as a whole, or partition by partition
        assert "AUTHORIZATION_FAILED" in str(exc)
    else:
        assert [tp.error.name() for tp in answer.topic_partitions] == ["GROUP_AUTHORIZATION_FAILED"]
    topic = f"sec-write-{uuid.uuid4().hex[:8]}"
    with pytest.raises(KafkaException, match="AUTHORIZATION_FAILED"):
        admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(20)
    with pytest.raises(KafkaException, match="AUTHORIZATION_FAILED"):
        admin.delete_consumer_groups([secured_groups.held])[secured_groups.held].result(20)


def test_a_group_or_topic_it_may_not_describe_is_a_warning_on_the_sources_page(
    secured_ctx: Context, secured_admin: AdminClient, secured_groups: Groups, settings, tmp_path
) -> None:
    settings.LAGWATCH_SAMPLE_LOG_URL = str(tmp_path / "samples")
    stem = f"sec-acl-{uuid.uuid4().hex[:8]}"
    hidden_group, reader = f"{stem}-hidden-group", f"{stem}-reader"
    alter_offsets(secured_admin, hidden_group, {(secured_groups.topic, 0): 1})
    hidden_topic = create_topic(secured_admin, 2)
    produce(admin_bootstrap(secured_ctx), hidden_topic, {0: 3, 1: 2})
    alter_offsets(secured_admin, reader, {(hidden_topic, 0): 2, (secured_groups.topic, 1): 1})
    deny(secured_ctx, "group", hidden_group)
    deny(secured_ctx, "topic", hidden_topic)

    config = client_config(secured_ctx, "SASL_SSL", "SCRAM-SHA-256")
    cluster = Cluster.objects.create(
        name=f"c-{uuid.uuid4().hex[:6]}", poll_interval_s=10,
        kafka_bootstrap_servers=config.pop("bootstrap.servers"), kafka_config=config,
    )  # fmt: skip
    # Two cycles: a topic is said hidden once two caught-up cycles in a row found it so (a
    # topic deleted a moment ago looks hidden for one).
    run_cluster_cycle(cluster)
    run_cluster_cycle(cluster)

    errors = {e.where: e.error for e in CollectionError.objects.filter(cluster=cluster)}
    assert "GROUP_AUTHORIZATION_FAILED" in errors[f"group {hidden_group}"]
    assert "hides the topic" in errors[f"group {reader} topic {hidden_topic}"]
    # Every other group, with its partitions and lag; the reader without the hidden topic.
    collected = {g.name: g for g in ConsumerGroup.objects.filter(cluster=cluster)}
    for name in (*secured_groups.names, reader):
        assert name in collected, name
    lag = {
        (p.group.name, p.topic, p.partition): p.lag
        for p in PartitionState.objects.filter(group__cluster=cluster)
    }
    assert lag[(secured_groups.held, secured_groups.topic, 0)] == 3
    assert lag[(reader, secured_groups.topic, 1)] == 2
    assert not any(topic == hidden_topic for _, topic, _ in lag)

    browser = Client()
    browser.force_login(user_with_role(f"viewer-{stem}", None))
    page = browser.get(reverse("ui:sources"), {"cluster": cluster.name})
    assert page.status_code == 200
    text = page.content.decode()
    for shown in (hidden_group, "GROUP_AUTHORIZATION_FAILED", hidden_topic, "hides the topic"):
        assert shown in text, shown
