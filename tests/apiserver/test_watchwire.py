"""The WatchBatches messages the apiserver writes as bytes (services/apiserver/watchwire.py)
are byte for byte protobuf's serialization of the same WatchEventBatch, and decode to it."""

from __future__ import annotations

from google.protobuf import any_pb2
from hypothesis import given, settings
from hypothesis import strategies as st

from protos.kubera.v1 import apiserver_pb2 as pb
from services.api.machinery.kinds import BY_KIND
from services.apiserver import watchwire
from tests.builders import MakePod
from tests.profiles import examples

PODS = BY_KIND["Pod"]


def _reference(type_url: str, events: list[tuple[str, bytes]]) -> bytes:
    return pb.WatchEventBatch(
        events=[
            pb.WatchEvent(type=t, object=any_pb2.Any(type_url=type_url, value=data))
            for t, data in events
        ]
    ).SerializeToString()


TYPES = st.sampled_from(["ADDED", "MODIFIED", "DELETED", "BOOKMARK", ""]) | st.text(max_size=200)
DATA = st.binary(max_size=300) | st.integers(16_000, 20_000).map(lambda n: b"\x07" * n)


@settings(max_examples=examples(300), deadline=None)
@given(
    st.sampled_from([PODS.type_url, "", "x" * 130]),
    st.lists(st.tuples(TYPES, DATA), max_size=6),
)
def test_event_batch_is_protobufs_serialization(
    type_url: str, events: list[tuple[str, bytes]]
) -> None:
    assert watchwire.event_batch(type_url, events) == _reference(type_url, events)


def test_a_batch_of_pods_decodes_to_the_pods() -> None:
    pods = []
    for i in range(3):
        pod = MakePod().typed().name(f"p{i}").namespace("default").container("c", "i").obj()
        pod.metadata.resource_version = str(10 + i)
        pods.append(pod)
    events = [("ADDED", p.SerializeToString()) for p in pods]
    wire = watchwire.event_batch(PODS.type_url, events)
    assert wire == _reference(PODS.type_url, events)
    batch = pb.WatchEventBatch.FromString(wire)
    assert [e.type for e in batch.events] == ["ADDED"] * 3
    for e, pod in zip(batch.events, pods, strict=True):
        got = PODS.message()
        assert e.object.Unpack(got)
        assert got == pod


def test_varint_matches_protobufs_lengths() -> None:
    """A length at each varint size boundary, as protobuf writes it before a value."""
    for n in (0, 1, 127, 128, 300, 16_383, 16_384, 2_097_152):
        value = b"x" * n
        assert watchwire.any_bytes("", value) == any_pb2.Any(value=value).SerializeToString()
