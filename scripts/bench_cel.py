"""Measure the CEL libraries kubera could use for DRA device selectors (issue 16).

Not a test. For each candidate that is installed, one typical selector on one typical GPU
device (8 attributes): compile µs and µs per evaluation on a ready activation. Then
kubera's own path (services.api.dra.cel): compile_selector, and Selector.matches with the
device conversion (first match of a device) and from the per-device cache.

    .venv/bin/python scripts/bench_cel.py            # candidates: pip install cel-python common-expression-language
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

DRIVER = "gpu.example.com"
SELECTOR = (
    'device.driver == "gpu.example.com" && device.attributes["gpu.example.com"].model == "A100"'
    ' && device.attributes["gpu.example.com"].index < 4'
)
DEVICE = {
    "driver": DRIVER,
    "attributes": {
        DRIVER: {
            "model": "A100",
            "index": 2,
            "nvlink": True,
            "uuid": "gpu-0a1b2c3d",
            "pcieRoot": "pci0000:00",
            "numa": 0,
            "family": "ampere",
            "vendor": "example",
        }
    },
    "capacity": {DRIVER: {"memory": "80Gi"}},
}


def per_call(fn: Callable[[], Any], n: int) -> float:
    fn()
    t = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - t) / n * 1e6


def bench_cel_expr_python() -> tuple[float, float]:
    from cel_expr_python import cel

    env = cel.NewEnv(variables={"device": cel.Type.Map(cel.Type.STRING, cel.Type.DYN)})
    compile_us = per_call(lambda: env.compile(SELECTOR), 200)
    expr = env.compile(SELECTOR)
    act = env.Activation({"device": DEVICE})
    assert expr.eval(act).value() is True
    return compile_us, per_call(lambda: expr.eval(act), 20000)


def bench_common_expression_language() -> tuple[float, float]:
    import cel  # type: ignore[import-not-found]

    compile_us = per_call(lambda: cel.compile(SELECTOR), 200)
    prog = cel.compile(SELECTOR)
    ctx = cel.Context({"device": DEVICE})
    assert prog.execute(ctx) is True
    return compile_us, per_call(lambda: prog.execute(ctx), 20000)


def bench_cel_python() -> tuple[float, float]:
    import celpy  # type: ignore[import-not-found]

    env = celpy.Environment()
    compile_us = per_call(lambda: env.program(env.compile(SELECTOR)), 20)
    prog = env.program(env.compile(SELECTOR))
    act = celpy.json_to_cel({"device": DEVICE})
    assert bool(prog.evaluate(act)) is True
    return compile_us, per_call(lambda: prog.evaluate(act), 1000)


def bench_kubera() -> None:
    from services.api.dra import cel as kcel
    from tests.builders import device

    attrs = dict(DEVICE["attributes"][DRIVER])  # type: ignore[index]
    devices = [device(f"gpu-{i}", attrs, {"memory": "80Gi"}) for i in range(20000)]
    sel = kcel.compile_selector(SELECTOR)
    n = iter(range(10**9))
    compile_us = per_call(lambda: kcel._compile(SELECTOR + f" || {next(n)} < 0"), 200)
    it = iter(devices)
    cold = per_call(lambda: sel.matches(DRIVER, next(it)), len(devices) - 1)
    warm = per_call(lambda: sel.matches(DRIVER, devices[0]), 20000)
    q = kcel.compile_selector(
        'device.capacity["gpu.example.com"].memory.compareTo(quantity("40Gi")) >= 0'
    )
    quantity = per_call(lambda: q.matches(DRIVER, devices[0]), 20000)
    print(f"kubera compile_selector (uncached): {compile_us:8.1f} µs")
    print(f"kubera matches, first sight of a device (conversion): {cold:8.2f} µs")
    print(f"kubera matches, device cached: {warm:8.2f} µs")
    print(f"kubera matches, quantity compareTo (Python function), cached: {quantity:8.2f} µs")


def main() -> None:
    for name, fn in (
        ("cel-expr-python", bench_cel_expr_python),
        ("common-expression-language", bench_common_expression_language),
        ("cel-python", bench_cel_python),
    ):
        try:
            compile_us, eval_us = fn()
        except ImportError:
            print(f"{name}: not installed")
            continue
        print(f"{name}: compile {compile_us:9.1f} µs, eval {eval_us:8.2f} µs")
    bench_kubera()


if __name__ == "__main__":
    main()
