"""kubera.experiment.spec.trace: Alibaba openb CSVs → pods and nodes, the replay timeline, errors
naming file:line, and the deterministic synthetic sample."""

from __future__ import annotations

from pathlib import Path

import pytest

from kubera.experiment.spec import trace
from kubera.experiment.spec.trace import TraceError, TracePod, read_nodes, read_pods, schedule

ROOT = Path(__file__).resolve().parents[3]
SAMPLE = ROOT / "examples" / "experiments" / "traces"
POD_HEADER = ",".join(trace.POD_COLUMNS)


def pod(**kw) -> TracePod:
    base = dict(
        name="p",
        cpu_milli=4000,
        memory_mib=15258,
        num_gpu=0,
        gpu_milli=0,
        gpu_spec=(),
        qos="LS",
        pod_phase="Running",
        creation_time=0.0,
        deletion_time=None,
        scheduled_time=None,
        line=2,
    )
    return TracePod(**{**base, **kw})


def test_reads_the_real_trace_rows_as_published(tmp_path):
    # Rows copied from alibaba/clusterdata cluster-trace-gpu-v2023/csv/openb_pod_list_default.csv
    # (a never-scheduled Pending pod has an empty scheduled_time).
    path = tmp_path / "openb_pod_list_default.csv"
    path.write_text(
        POD_HEADER + "\n"
        "openb-pod-0017,88000,327680,8,1000,,Burstable,Succeeded,9437497,10769854,9437497\n"
        "openb-pod-0035,16000,32768,1,1000,V100M16|V100M32,LS,Running,9967058,9968575,9967063\n"
        "openb-pod-0061,11908,47104,1,1000,,BE,Pending,10001278,10001403,\n"
    )
    p17, p35, p61 = read_pods(str(path))
    assert (p17.num_gpu, p17.gpu_milli, p17.whole_gpus, p17.gpu_milli_total) == (8, 1000, 8, 8000)
    assert p35.gpu_spec == ("V100M16", "V100M32") and p35.line == 3
    assert p61.scheduled_time is None and p61.deletion_time == 10001403


@pytest.mark.parametrize(
    ("row", "requests", "limits"),
    [
        (
            pod(cpu_milli=12000, memory_mib=16384, num_gpu=0),
            {"cpu": "12000m", "memory": "16384Mi"},
            None,
        ),
        (
            pod(num_gpu=1, gpu_milli=460),
            {"cpu": "4000m", "memory": "15258Mi", "kubera.io/gpu-milli": "460"},
            {"kubera.io/gpu-milli": "460"},
        ),
        (
            pod(num_gpu=8, gpu_milli=1000),
            {
                "cpu": "4000m",
                "memory": "15258Mi",
                "kubera.io/gpu-milli": "8000",
                "nvidia.com/gpu": "8",
            },
            {"kubera.io/gpu-milli": "8000", "nvidia.com/gpu": "8"},
        ),
    ],
    ids=["cpu-only", "gpu-sharing-requests-only-milli", "whole-gpus-request-both"],
)
def test_a_row_becomes_a_pod_requesting_cpu_memory_and_gpus(row, requests, limits):
    spec = row.to_pod("ns")
    resources = spec["spec"]["containers"][0]["resources"]
    assert resources["requests"] == requests
    assert resources.get("limits") == limits
    assert spec["metadata"]["namespace"] == "ns"
    assert spec["metadata"]["labels"] == {"kubera.io/trace": "openb", "kubera.io/qos": "LS"}
    assert "affinity" not in spec["spec"]


def test_gpu_resource_name_and_gpu_spec_affinity():
    spec = pod(num_gpu=2, gpu_milli=1000, gpu_spec=("T4", "P100")).to_pod(
        "ns", gpu_resource_name="example.com/gpu"
    )
    assert spec["spec"]["containers"][0]["resources"]["limits"]["example.com/gpu"] == "2"
    terms = spec["spec"]["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ]["nodeSelectorTerms"]
    assert terms == [
        {
            "matchExpressions": [
                {"key": "kubera.io/gpu-model", "operator": "In", "values": ["T4", "P100"]}
            ]
        }
    ]


def test_a_node_row_offers_cpu_memory_whole_and_milli_gpus(tmp_path):
    path = tmp_path / "nodes.csv"
    path.write_text(
        "sn,cpu_milli,memory_mib,gpu,model\nopenb-node-0227,32000,262144,0,nan\n"
        "openb-node-0228,128000,786432,8,G3\n"
    )
    cpu_node, gpu_node = read_nodes(str(path))
    assert cpu_node.model == "" and cpu_node.to_node()["status"]["allocatable"] == {
        "cpu": "32000m",
        "memory": "262144Mi",
        "pods": "110",
    }
    node = gpu_node.to_node()
    assert node["metadata"]["name"] == "openb-node-0228"
    assert node["metadata"]["labels"]["kubera.io/gpu-model"] == "G3"
    assert node["status"]["capacity"]["nvidia.com/gpu"] == "8"
    assert node["status"]["capacity"]["kubera.io/gpu-milli"] == "8000"


def test_num_gpu_is_accepted_for_the_node_gpu_column(tmp_path):
    path = tmp_path / "nodes.csv"
    path.write_text("sn,cpu_milli,memory_mib,num_gpu\nn-1,1000,1024,2\n")
    assert read_nodes(str(path))[0].gpu == 2


def test_schedule_offsets_from_first_creation_scaled_and_limited():
    pods = [
        pod(name="b", creation_time=110.0, deletion_time=130.0),
        pod(name="a", creation_time=100.0, deletion_time=None),
        pod(name="c", creation_time=150.0, deletion_time=151.0),
    ]
    events = schedule(pods, time_scale=2.0)
    assert [(e.pod.name, e.create_at, e.delete_at) for e in events] == [
        ("a", 0.0, None),
        ("b", 5.0, 15.0),
        ("c", 25.0, 25.5),
    ]
    assert [e.pod.name for e in schedule(pods, limit=2)] == ["a", "b"]
    with pytest.raises(ValueError):
        schedule(pods, time_scale=0)


POD_ROW = "p-0,1000,1024,0,0,,LS,Running,5,9,6"


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("", ":1: empty file"),
        ("name,cpu_milli\np,1\n", ":1: missing column(s) memory_mib, num_gpu, gpu_milli, qos"),
        (f"{POD_HEADER}\n{POD_ROW},extra\n", ":2: expected 11 fields, got 12"),
        (
            f"{POD_HEADER}\n{POD_ROW.replace('1000', 'lots', 1)}\n",
            ":2: cpu_milli: expected a number",
        ),
        (
            f"{POD_HEADER}\n{POD_ROW.replace(',0,0,', ',1,1200,')}\n",
            ":2: gpu_milli: must be at most 1000",
        ),
        (
            f"{POD_HEADER}\n{POD_ROW.replace(',1024,', ',-5,')}\n",
            ":2: memory_mib: expected a non-negative",
        ),
        (
            f"{POD_HEADER}\n{POD_ROW.replace(',5,9,', ',5,3,')}\n",
            ":2: deletion_time: 3 is before creation_time 5",
        ),
        (f"{POD_HEADER}\n{POD_ROW.replace(',5,9,', ',,9,')}\n", ":2: creation_time: required"),
        (
            f"{POD_HEADER}\n{POD_ROW}\n\n{POD_ROW}\n",
            ":4: name: duplicate pod 'p-0' (first on line 2)",
        ),
        (f"{POD_HEADER}\n{POD_ROW.replace('p-0', 'P_0')}\n", ":2: name: not a valid pod name"),
    ],
)
def test_pod_trace_errors_name_file_and_line(tmp_path, content, message):
    path = tmp_path / "pods.csv"
    path.write_text(content)
    with pytest.raises(TraceError) as info:
        read_pods(str(path))
    assert str(info.value).startswith(f"{path}:"), info.value
    assert message in str(info.value), info.value


def test_node_trace_errors_name_file_and_line(tmp_path):
    path = tmp_path / "nodes.csv"
    path.write_text("sn,cpu_milli,memory_mib,gpu,model\nn-1,1000,1024,x,G2\n")
    with pytest.raises(TraceError, match=r"nodes\.csv:2: gpu: expected a number"):
        read_nodes(str(path))
    with pytest.raises(TraceError, match=r"missing\.csv: cannot open"):
        read_nodes(str(tmp_path / "missing.csv"))


def test_synthesize_is_deterministic_and_in_the_schema(tmp_path):
    a = trace.synthesize(50, 5, seed=7, duration=30.0)
    assert a == trace.synthesize(50, 5, seed=7, duration=30.0)
    assert a != trace.synthesize(50, 5, seed=8, duration=30.0)
    assert (
        trace.main(
            ["--pods", "50", "--nodes", "5", "--seed", "7", "--duration", "30", str(tmp_path)]
        )
        == 0
    )
    pods = read_pods(str(tmp_path / "openb_pod_list_sample.csv"))
    nodes = read_nodes(str(tmp_path / "openb_node_list_sample.csv"))
    assert len(pods) == 50 and len(nodes) == 5
    assert all(p.name.startswith("synth-pod-") for p in pods)
    assert max(p.creation_time for p in pods) < 60.0


def test_the_shipped_sample_is_the_documented_generator_output(tmp_path):
    trace.main(["--pods", "300", "--nodes", "20", "--seed", "13", str(tmp_path)])
    for name in ("openb_pod_list_sample.csv", "openb_node_list_sample.csv"):
        assert (tmp_path / name).read_text() == (SAMPLE / name).read_text(), name
    pods = read_pods(str(SAMPLE / "openb_pod_list_sample.csv"))
    span = max(p.creation_time for p in pods) - min(p.creation_time for p in pods)
    assert len(pods) == 300 and 45.0 <= span <= 65.0
    assert {p.num_gpu > 0 for p in pods} == {True, False}
    assert any(0 < p.gpu_milli < 1000 for p in pods) and any(p.gpu_spec for p in pods)


def test_every_sample_pod_and_node_decodes_strictly_with_kuberas_codec():
    from services.api.machinery import codec

    for p in read_pods(str(SAMPLE / "openb_pod_list_sample.csv")):
        assert codec.decode(p.to_pod("trace"), validate="strict").kind.kind == "Pod"
    for n in read_nodes(str(SAMPLE / "openb_node_list_sample.csv")):
        assert codec.decode(n.to_node(), validate="strict").kind.kind == "Node"
