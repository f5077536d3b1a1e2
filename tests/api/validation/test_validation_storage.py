"""Validation of the storage kinds (services/api/validation/storage.py), with the cases of
upstream's pkg/apis/core/validation/validation_test.go (TestValidatePersistentVolumes,
TestValidatePersistentVolumeSourceUpdate, TestValidateLocalVolumes, the volume node
affinity cases) and pkg/apis/storage/validation/validation_test.go
(TestValidateStorageClass, TestValidateAllowedTopologies, TestVolumeAttachmentValidation,
TestCSINodeValidation, TestCSIDriverValidation, TestCSIDriverValidationUpdate,
TestValidateCSIStorageCapacity): the field path and error type of each refusal, after the
API defaults were applied as the apiserver does before validating."""

from __future__ import annotations

from typing import Any

import pytest

from services.api import validation
from services.api.machinery import codec
from services.api.machinery.kinds import BY_KIND
from services.apiserver import admission

Json = dict[str, Any]
REQ, INV, UNS, FORB, DUP, LONG = (
    "Required value",
    "Invalid value",
    "Unsupported value",
    "Forbidden",
    "Duplicate value",
    "Too long",
)


def _obj(kind: str, doc: Json) -> Any:
    k = BY_KIND[kind]
    full = {"apiVersion": k.api_version, "kind": kind, **doc}
    full.setdefault(
        "metadata", {"name": "foo", **({"namespace": "default"} if k.namespaced else {})}
    )
    obj = codec.decode(full, validate="strict").obj
    admission.apply_defaults(k, obj)
    return obj


def errors(kind: str, doc: Json) -> list[tuple[str, str]]:
    return [(e.path, e.type) for e in validation.validate_create(kind, _obj(kind, doc))]


def update_errors(kind: str, old: Json, new: Json) -> list[tuple[str, str]]:
    o, n = _obj(kind, old), _obj(kind, new)
    n.metadata.resource_version = o.metadata.resource_version = "1"
    return [(e.path, e.type) for e in validation.validate_update(kind, n, o)]


def pv(**spec: Any) -> Json:
    """testVolume: 10G, RWO, a hostPath source unless `spec` says otherwise."""
    base: Json = {
        "capacity": {"storage": "10G"},
        "accessModes": ["ReadWriteOnce"],
        "hostPath": {"path": "/foo", "type": ""},
    }
    return {"spec": {**base, **spec}}


def _affinity(
    key: str = "test-label-key", op: str = "In", values: Any = ("test-label-value",)
) -> Json:
    expr = {"key": key, "operator": op, **({"values": list(values)} if values is not None else {})}
    return {"required": {"nodeSelectorTerms": [{"matchExpressions": [expr]}]}}


@pytest.mark.parametrize(
    ("doc", "want"),
    [
        pytest.param(pv(), [], id="good-volume"),
        pytest.param(pv(capacity={"storage": "10Gi"}), [], id="good-volume-with-capacity-unit"),
        pytest.param(pv(capacity={"storage": "10"}), [], id="good-volume-without-capacity-unit"),
        pytest.param(pv(storageClassName="valid"), [], id="good-volume-with-storage-class"),
        pytest.param(
            pv(persistentVolumeReclaimPolicy="Retain"), [], id="good-volume-with-retain-policy"
        ),
        pytest.param(pv(volumeMode="Block"), [], id="good-volume-with-volume-mode"),
        pytest.param(pv(accessModes=["ReadWriteOncePod"]), [], id="with-read-write-once-pod"),
        pytest.param(
            pv(accessModes=["ReadWriteOncePod", "ReadWriteMany"]),
            [("spec.accessModes", FORB)],
            id="with-read-write-once-pod-and-others",
        ),
        pytest.param(
            pv(accessModes=["fakemode"]), [("spec.accessModes", UNS)], id="invalid-accessmode"
        ),
        pytest.param(
            pv(persistentVolumeReclaimPolicy="fakeReclaimPolicy"),
            [("spec.persistentVolumeReclaimPolicy", UNS)],
            id="invalid-reclaimpolicy",
        ),
        pytest.param(
            pv(volumeMode="fakeVolumeMode"), [("spec.volumeMode", UNS)], id="invalid-volume-mode"
        ),
        pytest.param(
            {"metadata": {"name": "foo", "namespace": "unexpected-namespace"}, **pv()},
            [("metadata.namespace", FORB)],
            id="unexpected-namespace",
        ),
        pytest.param(
            {"spec": {"capacity": {"storage": "10G"}, "accessModes": ["ReadWriteOnce"]}},
            [("spec", REQ)],
            id="missing-volume-source",
        ),
        pytest.param(
            {"metadata": {"name": "123*Bad(Name"}, **pv()}, [("metadata.name", INV)], id="bad-name"
        ),
        pytest.param(
            {"metadata": {"name": ""}, **pv()}, [("metadata.name", REQ)], id="missing-name"
        ),
        pytest.param(
            pv(capacity={}), [("spec.capacity", REQ), ("spec.capacity", UNS)], id="missing-capacity"
        ),
        pytest.param(
            pv(capacity={"storage": "0"}),
            [("spec.capacity[storage]", INV)],
            id="bad-volume-zero-capacity",
        ),
        pytest.param(pv(accessModes=[]), [("spec.accessModes", REQ)], id="missing-accessmodes"),
        pytest.param(
            pv(gcePersistentDisk={"pdName": "foo", "fsType": "ext4"}),
            [("spec.gcePersistentDisk", FORB)],
            id="too-many-sources",
        ),
        pytest.param(
            pv(hostPath={"path": "/", "type": ""}, persistentVolumeReclaimPolicy="Recycle"),
            [("spec.persistentVolumeReclaimPolicy", FORB)],
            id="host mount of / with recycle reclaim policy",
        ),
        pytest.param(
            pv(hostPath={"path": "/a/..", "type": ""}, persistentVolumeReclaimPolicy="Recycle"),
            [("spec.hostPath.path", INV), ("spec.persistentVolumeReclaimPolicy", FORB)],
            id="host mount of / with recycle reclaim policy 2",
        ),
        pytest.param(
            pv(storageClassName="-invalid-"),
            [("spec.storageClassName", INV)],
            id="invalid-storage-class-name",
        ),
        pytest.param(
            pv(hostPath={"path": "/foo/..", "type": ""}),
            [("spec.hostPath.path", INV)],
            id="bad-hostpath-volume-backsteps",
        ),
        pytest.param(pv(nodeAffinity=_affinity()), [], id="volume-node-affinity"),
        pytest.param(
            pv(nodeAffinity={}),
            [("spec.nodeAffinity.required", REQ)],
            id="volume-empty-node-affinity",
        ),
        pytest.param(
            pv(nodeAffinity=_affinity(op="In", values=None)),
            [("spec.nodeAffinity.required.nodeSelectorTerms[0].matchExpressions[0].values", REQ)],
            id="volume-bad-node-affinity",
        ),
    ],
)
def test_a_persistent_volume_is_validated_as_upstream(
    doc: Json, want: list[tuple[str, str]]
) -> None:
    assert errors("PersistentVolume", doc) == want


def _local(**spec: Any) -> Json:
    doc = pv(**spec)
    del doc["spec"]["hostPath"]
    return doc


@pytest.mark.parametrize(
    ("doc", "want"),
    [
        pytest.param(
            _local(local={"path": "/foo"}, nodeAffinity=_affinity()), [], id="valid-local-volume"
        ),
        pytest.param(
            _local(local={"path": "foo"}, nodeAffinity=_affinity()),
            [("spec.local.path", INV)],
            id="invalid-local-volume-relative-path",
        ),
        pytest.param(
            _local(local={"path": "/foo/.."}, nodeAffinity=_affinity()),
            [("spec.local.path", INV)],
            id="invalid-local-volume-backsteps",
        ),
        pytest.param(
            _local(local={"path": "/foo"}),
            [("spec.nodeAffinity", REQ)],
            id="invalid-local-volume-no-node-affinity",
        ),
        pytest.param(
            _local(csi={"driver": "test-driver", "volumeHandle": "h"}), [], id="csi-volume"
        ),
        pytest.param(
            _local(csi={"driver": "", "volumeHandle": ""}),
            [("spec.csi.driver", REQ), ("spec.csi.volumeHandle", REQ)],
            id="csi-without-driver-and-handle",
        ),
        pytest.param(
            _local(csi={"driver": "io.kubernetes.storage.csi.driver-", "volumeHandle": "h"}),
            [("spec.csi.driver", INV)],
            id="csi-invalid-driver-name",
        ),
        pytest.param(
            _local(csi={"driver": "d", "volumeHandle": "h", "nodeStageSecretRef": {"name": "s"}}),
            [("spec.csi.nodeStageSecretRef.namespace", REQ)],
            id="csi-secret-ref-without-namespace",
        ),
        pytest.param(
            _local(gcePersistentDisk={"pdName": "", "partition": 300}),
            [("spec.persistentDisk.pdName", REQ), ("spec.persistentDisk.partition", INV)],
            id="gce-pd-errors-under-upstreams-persistentDisk-path",
        ),
        pytest.param(
            _local(awsElasticBlockStore={"volumeID": ""}),
            [("spec.awsElasticBlockStore.volumeID", REQ)],
            id="aws-without-volume-id",
        ),
        pytest.param(
            _local(nfs={"server": "", "path": "relative"}),
            [("spec.nfs.server", REQ), ("spec.nfs.path", INV)],
            id="nfs-server-and-absolute-path",
        ),
    ],
)
def test_a_volume_source_is_validated_as_upstream(doc: Json, want: list[tuple[str, str]]) -> None:
    assert errors("PersistentVolume", doc) == want


def test_a_volume_source_is_immutable_but_a_csi_volume_may_gain_an_expand_secret() -> None:
    """TestValidatePersistentVolumeSourceUpdate."""
    csi = {"driver": "come.google.gcepd", "volumeHandle": "foobar"}
    old = _local(csi=csi)
    assert update_errors("PersistentVolume", old, _local(csi={**csi, "volumeHandle": "other"})) == [
        ("spec.persistentvolumesource", FORB)
    ]
    secret = {"name": "foo", "namespace": "default"}
    assert (
        update_errors(
            "PersistentVolume", old, _local(csi={**csi, "controllerExpandSecretRef": secret})
        )
        == []
    )
    assert update_errors("PersistentVolume", pv(), pv(volumeMode="Block")) == [("volumeMode", INV)]
    assert update_errors("PersistentVolume", pv(), pv(nodeAffinity=_affinity())) == []
    assert update_errors(
        "PersistentVolume", pv(nodeAffinity=_affinity()), pv(nodeAffinity=_affinity(values=["x"]))
    ) == [("nodeAffinity", INV)]


# ----------------------------------------------------------------------------- storage.k8s.io


def sc(**fields: Any) -> Json:
    return {"provisioner": "kubernetes.io/foo-provisioner", **fields}


@pytest.mark.parametrize(
    ("doc", "want"),
    [
        pytest.param(sc(parameters={"foo": "bar"}), [], id="good"),
        pytest.param(sc(reclaimPolicy="Retain"), [], id="retain"),
        pytest.param(
            sc(volumeBindingMode="WaitForFirstConsumer"), [], id="wait-for-first-consumer"
        ),
        pytest.param(
            {"metadata": {"name": "foo", "namespace": "bar"}, **sc()},
            [("metadata.namespace", FORB)],
            id="namespace is present",
        ),
        pytest.param(
            sc(provisioner="kubernetes.io/invalid/provisioner"),
            [("provisioner", INV)],
            id="invalid provisioner",
        ),
        pytest.param(
            sc(parameters={"": "value"}), [("parameters", INV)], id="invalid empty parameter name"
        ),
        pytest.param(sc(provisioner=""), [("provisioner", REQ)], id="provisioner: Required value"),
        pytest.param(
            sc(parameters={f"key{i}": "v" for i in range(513)}),
            [("parameters", LONG)],
            id="too long parameters",
        ),
        pytest.param(
            sc(reclaimPolicy="bogus-reclaim-policy"),
            [("reclaimPolicy", UNS)],
            id="invalid reclaimpolicy",
        ),
        pytest.param(
            sc(volumeBindingMode="foo"), [("volumeBindingMode", UNS)], id="invalid binding mode"
        ),
        pytest.param(
            sc(
                allowedTopologies=[
                    {"matchLabelExpressions": [{"key": "zone", "values": ["a", "b"]}]}
                ]
            ),
            [],
            id="valid topology",
        ),
        pytest.param(
            sc(allowedTopologies=[{"matchLabelExpressions": [{"key": "zone", "values": []}]}]),
            [("allowedTopologies[0].matchLabelExpressions[0].values", REQ)],
            id="empty values",
        ),
        pytest.param(
            sc(
                allowedTopologies=[
                    {"matchLabelExpressions": [{"key": "zone", "values": ["a", "a"]}]}
                ]
            ),
            [("allowedTopologies[0].matchLabelExpressions[0].values[1]", DUP)],
            id="duplicate values",
        ),
        pytest.param(
            sc(
                allowedTopologies=[
                    {"matchLabelExpressions": [{"key": "-invalid-", "values": ["a"]}]}
                ]
            ),
            [("allowedTopologies[0].matchLabelExpressions[0].key", INV)],
            id="invalid key",
        ),
        pytest.param(
            sc(
                allowedTopologies=[
                    {
                        "matchLabelExpressions": [
                            {"key": "zone", "values": ["a"]},
                            {"key": "zone", "values": ["b"]},
                        ]
                    }
                ]
            ),
            [("allowedTopologies[0].matchLabelExpressions[1].key", DUP)],
            id="duplicate key",
        ),
        pytest.param(
            sc(
                allowedTopologies=[
                    {"matchLabelExpressions": [{"key": "zone", "values": ["a"]}]},
                    {"matchLabelExpressions": [{"key": "zone", "values": ["a"]}]},
                ]
            ),
            [("allowedTopologies[1].matchLabelExpressions", DUP)],
            id="duplicate term",
        ),
    ],
)
def test_a_storage_class_is_validated_as_upstream(doc: Json, want: list[tuple[str, str]]) -> None:
    assert errors("StorageClass", doc) == want


def test_a_storage_class_keeps_its_provisioner_parameters_policy_and_mode() -> None:
    """TestValidateStorageClassUpdate and the immutable volumeBindingMode."""
    old = sc(parameters={"a": "b"})
    assert update_errors("StorageClass", old, sc(parameters={"a": "c"})) == [("parameters", FORB)]
    assert update_errors("StorageClass", old, {**old, "provisioner": "other.io/x"}) == [
        ("provisioner", FORB)
    ]
    assert update_errors("StorageClass", old, {**old, "reclaimPolicy": "Retain"}) == [
        ("reclaimPolicy", FORB)
    ]
    assert update_errors(
        "StorageClass", old, {**old, "volumeBindingMode": "WaitForFirstConsumer"}
    ) == [("volumeBindingMode", INV)]
    assert update_errors("StorageClass", old, {**old, "allowVolumeExpansion": True}) == []


def va(**spec: Any) -> Json:
    base: Json = {
        "attacher": "myattacher",
        "nodeName": "mynode",
        "source": {"persistentVolumeName": "myPV".lower()},
    }
    return {"spec": {**base, **spec}}


@pytest.mark.parametrize(
    ("doc", "want"),
    [
        pytest.param(va(), [], id="good"),
        pytest.param(va(attacher=""), [("spec.attacher", REQ)], id="empty attacher"),
        pytest.param(va(source={}), [("spec.source", REQ)], id="empty source"),
        pytest.param(
            va(source={"persistentVolumeName": "a", "inlineVolumeSpec": pv()["spec"]}),
            [("spec.source", FORB)],
            id="both sources",
        ),
        pytest.param(va(nodeName="Invalid_Node"), [("spec.nodeName", INV)], id="invalid node name"),
        pytest.param(va(attacher="-bad-"), [("spec.attacher", INV)], id="invalid attacher name"),
    ],
)
def test_a_volume_attachment_is_validated_as_upstream(
    doc: Json, want: list[tuple[str, str]]
) -> None:
    assert errors("VolumeAttachment", doc) == want


def test_a_volume_attachment_spec_is_read_only() -> None:
    assert update_errors("VolumeAttachment", va(), va(nodeName="other")) == [("spec", INV)]
    done = {**va(), "status": {"attached": True}}
    assert update_errors("VolumeAttachment", va(), done) == []


def node(*drivers: Json) -> Json:
    return {"spec": {"drivers": list(drivers)}}


def drv(name: str = "io.kubernetes.storage.csi.driver", **more: Any) -> Json:
    return {"name": name, "nodeID": "nodeA", **more}


@pytest.mark.parametrize(
    ("doc", "want"),
    [
        pytest.param(
            node(drv(), drv("driverB", topologyKeys=["company.com/zone1"])), [], id="valid drivers"
        ),
        pytest.param(node(drv(allocatable={"count": 0})), [], id="zero allocatable"),
        pytest.param(node(drv(), drv()), [("spec.drivers[1].name", DUP)], id="duplicate drivers"),
        pytest.param(node(drv(nodeID="")), [("spec.drivers[0].nodeID", REQ)], id="empty node ID"),
        pytest.param(
            node(drv(nodeID="a" * 193)), [("spec.drivers[0].nodeID", INV)], id="node ID too long"
        ),
        pytest.param(
            node(drv(allocatable={"count": -1})),
            [("spec.drivers[0].allocatable.count", INV)],
            id="negative count",
        ),
        pytest.param(node(drv(name="")), [("spec.drivers[0].name", REQ)], id="empty driver name"),
        pytest.param(
            node(drv(name="a" * 64)), [("spec.drivers[0].name", LONG)], id="driver name too long"
        ),
        pytest.param(
            node(drv(topologyKeys=["company.com/zone1", "company.com/zone1"])),
            [("spec.drivers[0]", DUP)],
            id="duplicate topology keys",
        ),
        pytest.param(
            node(drv(topologyKeys=["/zone"])), [("spec.drivers[0]", INV)], id="invalid topology key"
        ),
    ],
)
def test_a_csi_node_is_validated_as_upstream(doc: Json, want: list[tuple[str, str]]) -> None:
    assert errors("CSINode", doc) == want


def test_a_csi_nodes_driver_may_change_only_its_count() -> None:
    old = node(drv(allocatable={"count": 10}))
    assert update_errors("CSINode", old, node(drv(allocatable={"count": 20}))) == []
    assert update_errors("CSINode", old, node(drv(nodeID="nodeB", allocatable={"count": 10}))) == [
        ("spec.drivers", INV)
    ]
    assert update_errors("CSINode", old, node(drv(allocatable={"count": 10}), drv("driverB"))) == []


def csi_driver(**spec: Any) -> Json:
    return {"metadata": {"name": "foo.bar.example.com"}, "spec": spec}


@pytest.mark.parametrize(
    ("doc", "want"),
    [
        pytest.param(csi_driver(), [], id="defaults"),
        pytest.param(
            csi_driver(fsGroupPolicy="invalid-mode"),
            [("spec.fsGroupPolicy", UNS)],
            id="bad fsGroupPolicy",
        ),
        pytest.param(
            csi_driver(volumeLifecycleModes=["no-such-mode"]),
            [("spec.volumeLifecycleModes", UNS)],
            id="bad lifecycle mode",
        ),
        pytest.param(
            csi_driver(tokenRequests=[{"audience": "a"}, {"audience": "a"}]),
            [("spec.tokenRequests[1].audience", DUP)],
            id="duplicate audience",
        ),
        pytest.param(
            csi_driver(tokenRequests=[{"audience": "a", "expirationSeconds": 599}]),
            [("spec.tokenRequests[0].expirationSeconds", INV)],
            id="token lifetime under 10 minutes",
        ),
        pytest.param(
            csi_driver(nodeAllocatableUpdatePeriodSeconds=5),
            [("spec.nodeAllocatableUpdatePeriodSeconds", INV)],
            id="update period under 10 s",
        ),
        pytest.param(
            {"metadata": {"name": "-bad-"}, "spec": {}},
            [("metadata.name", INV)],
            id="invalid driver name",
        ),
    ],
)
def test_a_csi_driver_is_validated_as_upstream(doc: Json, want: list[tuple[str, str]]) -> None:
    assert errors("CSIDriver", doc) == want


def test_a_csi_driver_keeps_attach_required_and_lifecycle_modes() -> None:
    old = csi_driver(attachRequired=True)
    assert update_errors("CSIDriver", old, csi_driver(attachRequired=False)) == [
        ("spec.attachedRequired", INV)
    ]
    assert update_errors("CSIDriver", old, csi_driver(volumeLifecycleModes=["Ephemeral"])) == [
        ("spec.volumeLifecycleModes", INV)
    ]
    assert update_errors("CSIDriver", old, csi_driver(podInfoOnMount=True)) == []


def test_a_csi_drivers_defaults_are_upstreams() -> None:
    got = codec.encode(_obj("CSIDriver", csi_driver()))["spec"]
    assert got == {
        "attachRequired": True,
        "podInfoOnMount": False,
        "storageCapacity": False,
        "fsGroupPolicy": "ReadWriteOnceWithFSType",
        "requiresRepublish": False,
        "volumeLifecycleModes": ["Persistent"],
    }
    assert {
        k: v
        for k, v in codec.encode(_obj("StorageClass", sc())).items()
        if k.endswith(("Policy", "Mode"))
    } == {
        "reclaimPolicy": "Delete",
        "volumeBindingMode": "Immediate",
    }


@pytest.mark.parametrize(
    ("doc", "want"),
    [
        pytest.param({"storageClassName": "foo", "capacity": "1Gi"}, [], id="good"),
        pytest.param(
            {"storageClassName": "foo", "nodeTopology": {"matchLabels": {"zone": "a"}}},
            [],
            id="with topology",
        ),
        pytest.param(
            {"storageClassName": "-bad-"}, [("storageClassName", INV)], id="bad class name"
        ),
        pytest.param(
            {"storageClassName": "foo", "capacity": "-1"},
            [("capacity", INV)],
            id="negative capacity",
        ),
    ],
)
def test_a_csi_storage_capacity_is_validated_as_upstream(
    doc: Json, want: list[tuple[str, str]]
) -> None:
    assert errors("CSIStorageCapacity", doc) == want


def test_a_capacity_keeps_its_topology_and_class() -> None:
    old = {"storageClassName": "foo", "capacity": "1Gi"}
    assert update_errors("CSIStorageCapacity", old, {**old, "capacity": "2Gi"}) == []
    assert update_errors("CSIStorageCapacity", old, {**old, "storageClassName": "bar"}) == [
        ("storageClassName", INV)
    ]


def test_a_claim_spec_is_immutable_but_for_binding_resizing_and_a_first_class() -> None:
    """ValidatePersistentVolumeClaimUpdate (the parts kubera serves)."""
    base: Json = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}

    def claim(**spec: Any) -> Json:
        return {"spec": {**base, **spec}}

    assert update_errors("PersistentVolumeClaim", claim(), claim(volumeName="v")) == []
    assert update_errors("PersistentVolumeClaim", claim(volumeName="v"), claim(volumeName="w")) == [
        ("spec", FORB)
    ]
    assert update_errors("PersistentVolumeClaim", claim(), claim(storageClassName="gold")) == []
    assert update_errors(
        "PersistentVolumeClaim", claim(storageClassName="gold"), claim(storageClassName="x")
    ) == [("spec", FORB)]
    bigger = claim(resources={"requests": {"storage": "2Gi"}})
    assert update_errors("PersistentVolumeClaim", claim(), bigger) == []
    assert update_errors("PersistentVolumeClaim", claim(), claim(accessModes=["ReadOnlyMany"])) == [
        ("spec", FORB)
    ]
