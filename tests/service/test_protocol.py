"""KServe v2 / Open Inference Protocol REST conformance of `motionbricks serve-infer`: every
endpoint, both tensor encodings, and the error cases with their status codes and JSON error
bodies ({"error": message}), parsed by the independent client in v2_client.py."""

import json
import threading
import time

import numpy as np
import pytest

from service_fixture import Server, env, histogram_counts, metric_lines, simple_inputs
from v2_client import parse_infer_response

BUNDLE, STYLES = env("MB_BUNDLE"), env("MB_STYLES")
pytestmark = pytest.mark.skipif(not BUNDLE or not STYLES, reason="skipped: the C ABI tests' small bundle and styles are absent")


@pytest.fixture(scope="module")
def server():
    with Server(BUNDLE, STYLES) as s:
        yield s


@pytest.fixture()
def client(server):
    c = server.client()
    yield c
    c.close()


def error_of(r):
    """the protocol's error body: a JSON object with a string "error" """
    assert r.headers["content-type"].startswith("application/json")
    j = r.json()
    assert isinstance(j.get("error"), str) and j["error"], j
    return j["error"]


# ---- health, metadata ----------------------------------------------------------------------

def test_health(client):
    assert client.is_server_live()
    assert client.is_server_ready()
    assert client.is_model_ready("motionbricks")
    assert client.is_model_ready("motionbricks-agent")
    assert client.request("GET", "/v2/models/nope/ready").status == 404


def test_server_metadata(client):
    m = client.server_metadata()
    assert m["name"] == "motionbricks" and isinstance(m["version"], str)
    assert "binary_tensor_data" in m["extensions"]


def test_model_metadata(client):
    for path_version in (None, "1"):
        m = client.model_metadata("motionbricks", path_version)
        assert m["name"] == "motionbricks" and m["versions"] == ["1"] and m["platform"]
        inputs = {t["name"]: t for t in m["inputs"]}
        for name in ("global_root_values", "has_global_root_values", "local_root_values", "has_local_root_values",
                     "local_poses", "has_local_poses", "allowed_pred_num_tokens", "seed", "sampling"):
            assert name in inputs, name
        assert inputs["global_root_values"]["datatype"] == "FP32" and inputs["global_root_values"]["shape"] == [1, 8, 5]
        assert inputs["has_local_poses"]["datatype"] == "BOOL"
        outputs = {t["name"]: t for t in m["outputs"]}
        for name in ("global_features", "joint_positions", "local_rotations_xyzw", "mujoco_qpos", "num_frames"):
            assert name in outputs, name
        assert outputs["global_features"]["shape"] == [1, -1, 414]
    a = client.model_metadata("motionbricks-agent")
    assert {"style", "context_root_xyz", "context_local_rotations_xyzw"} <= {t["name"] for t in a["inputs"]}


def test_unknown_model_and_version(client):
    r = client.request("GET", "/v2/models/nope")
    assert r.status == 404 and "nope" in error_of(r)
    r = client.infer_raw("nope", simple_inputs())
    assert r.status == 404 and "nope" in error_of(r)
    r = client.request("GET", "/v2/models/motionbricks/versions/7")
    assert r.status == 404
    assert client.request("GET", "/v2/nothing").status == 404


def test_wrong_method(client):
    assert client.request("GET", "/v2/models/motionbricks/infer").status == 405
    assert client.request("POST", "/v2/health/live", body=b"{}").status == 405


# ---- inference ------------------------------------------------------------------------------

def test_infer_json(client):
    header, out = client.infer("motionbricks", simple_inputs(), request_id="abc-1")
    assert header["model_name"] == "motionbricks" and header["model_version"] == "1" and header["id"] == "abc-1"
    n = int(out["num_frames"][0])
    assert 24 <= n <= 64 and n % 4 == 0
    assert out["global_features"].shape == (1, n, 414) and out["global_features"].dtype == np.float32
    assert out["joint_positions"].shape == (1, n, 34, 3)
    assert out["local_rotations_xyzw"].shape == (1, n, 34, 4)
    assert out["mujoco_qpos"].shape == (1, n, 36)
    q = out["local_rotations_xyzw"].reshape(-1, 4)
    assert np.allclose((q * q).sum(1), 1.0, atol=1e-4)


def test_binary_equals_json(client):
    _, a = client.infer("motionbricks", simple_inputs(seed=3, sampling="gumbel"))
    for bin_in, bin_out in ((True, False), (False, True), (True, True)):
        r = client.infer_raw("motionbricks", simple_inputs(seed=3, sampling="gumbel"), binary_inputs=bin_in, binary_outputs=bin_out)
        assert r.status == 200
        if bin_out:
            assert r.headers["content-type"] == "application/octet-stream"
            assert int(r.headers["inference-header-content-length"]) < len(r.body)
        _, b = parse_infer_response(r)
        assert a.keys() == b.keys()
        for k in a:
            # JSON has no -inf: the duration logits of durations not allowed read null (NaN here)
            assert np.array_equal(a[k], b[k], equal_nan=True) or np.array_equal(np.nan_to_num(a[k], nan=-np.inf), b[k]), k


def test_requested_outputs(client):
    _, out = client.infer("motionbricks", simple_inputs(), outputs=["num_frames", "mujoco_qpos"], binary_outputs=True)
    assert set(out) == {"num_frames", "mujoco_qpos"}
    r = client.infer_raw("motionbricks", simple_inputs(), outputs=["nope"])
    assert r.status == 400 and "nope" in error_of(r)


def test_optional_inputs_and_integer_types(client):
    inputs = simple_inputs()
    inputs["num_tokens"] = np.array([10], np.int64)
    inputs["allowed_pred_num_tokens"] = np.ones((1, 11), np.int32)
    inputs["num_inference_steps"] = np.array([2], np.int32)
    _, out = client.infer("motionbricks", inputs)
    assert int(out["num_frames"][0]) == 40 and int(out["num_tokens"][0]) == 10


def test_nested_json_data(client):
    inputs = simple_inputs()
    body = {"inputs": []}
    for name, a in inputs.items():
        dt = {"float32": "FP32", "bool": "BOOL", "uint64": "UINT64", "object": "BYTES"}[str(a.dtype)]
        body["inputs"].append({"name": name, "shape": list(a.shape), "datatype": dt, "data": a.tolist()})
    r = client.request("POST", "/v2/models/motionbricks/infer", body=json.dumps(body).encode())
    assert r.status == 200
    _, flat = client.infer("motionbricks", inputs)
    _, nested = parse_infer_response(r)
    assert np.array_equal(flat["global_features"], nested["global_features"])


# ---- errors ---------------------------------------------------------------------------------

def test_wrong_datatype(client):
    inputs = simple_inputs()
    inputs["global_root_values"] = inputs["global_root_values"].astype(np.float64)
    r = client.infer_raw("motionbricks", inputs)
    assert r.status == 400 and "global_root_values" in error_of(r) and "FP32" in error_of(r)
    inputs = simple_inputs()
    inputs["has_local_poses"] = inputs["has_local_poses"].astype(np.float32)
    r = client.infer_raw("motionbricks", inputs)
    assert r.status == 400 and "has_local_poses" in error_of(r)


def test_wrong_shape(client):
    inputs = simple_inputs()
    inputs["local_poses"] = np.zeros((1, 8, 302), np.float32)
    r = client.infer_raw("motionbricks", inputs)
    assert r.status == 400 and "local_poses" in error_of(r) and "[1,8,303]" in error_of(r)
    # data that does not fill the shape
    body = {"inputs": [{"name": "seed", "shape": [1], "datatype": "UINT64", "data": [1, 2]}]}
    r = client.request("POST", "/v2/models/motionbricks/infer", body=json.dumps(body).encode())
    assert r.status == 400 and "seed" in error_of(r)


def test_missing_and_unknown_input(client):
    inputs = simple_inputs()
    del inputs["local_root_values"]
    r = client.infer_raw("motionbricks", inputs)
    assert r.status == 400 and "local_root_values" in error_of(r) and "missing" in error_of(r)
    inputs = simple_inputs()
    inputs["colour"] = np.zeros((1,), np.float32)
    r = client.infer_raw("motionbricks", inputs)
    assert r.status == 400 and "colour" in error_of(r)


def test_nan(client):
    inputs = simple_inputs()
    inputs["local_poses"][0, 2, 7] = np.nan
    r = client.infer_raw("motionbricks", inputs, binary_inputs=True)
    assert r.status == 400 and "local_poses" in error_of(r)
    # JSON has no NaN: the literal is malformed JSON
    body = json.dumps({"inputs": [{"name": "seed", "shape": [1], "datatype": "FP32", "data": [float("nan")]}]})
    r = client.request("POST", "/v2/models/motionbricks/infer", body=body.encode())
    assert r.status == 400 and "JSON" in error_of(r)


def test_bad_values_and_masks(client):
    inputs = simple_inputs()
    inputs["global_root_values"][0, 0, 3] = 0.2   # cos^2 + sin^2 far from 1
    r = client.infer_raw("motionbricks", inputs)
    assert r.status == 400, r.body
    inputs = simple_inputs()
    inputs["allowed_pred_num_tokens"] = np.zeros((1, 11), np.int32)
    r = client.infer_raw("motionbricks", inputs)
    assert r.status == 400 and "allowed_pred_num_tokens" in error_of(r)
    inputs = simple_inputs()
    inputs["sampling"] = np.array(["greedy"], np.object_)
    assert client.infer_raw("motionbricks", inputs).status == 400


def test_malformed_bodies(client):
    post = lambda body, headers=None: client.request("POST", "/v2/models/motionbricks/infer", body=body, headers=headers or {})
    for body in (b"", b"{", b"[]", b'{"inputs": 3}', b'{"inputs": [], "extra": 1}', b'{"inputs": [{"name": "seed"}]}',
                 b'{"inputs": [{"name": "seed", "shape": [1], "datatype": "FP33", "data": [1]}]}',
                 b'{"inputs": [{"name": "seed", "shape": [-1], "datatype": "UINT64", "data": []}]}',
                 b'{"inputs": [{"name": "seed", "shape": [1], "datatype": "UINT64", "data": [1]}, '
                 b'{"name": "seed", "shape": [1], "datatype": "UINT64", "data": [1]}]}'):
        r = post(body)
        assert r.status == 400, body
        error_of(r)
    header = b'{"inputs": [{"name": "seed", "shape": [1], "datatype": "UINT64", "parameters": {"binary_data_size": 8}}]}'
    # binary data shorter or longer than announced, a header length past the body, a bad header
    assert post(header + b"\0" * 7, {"Inference-Header-Content-Length": str(len(header))}).status == 400
    assert post(header + b"\0" * 9, {"Inference-Header-Content-Length": str(len(header))}).status == 400
    assert post(header + b"\0" * 8, {"Inference-Header-Content-Length": str(len(header) + 100)}).status == 400
    assert post(header + b"\0" * 8, {"Inference-Header-Content-Length": "x"}).status == 400
    assert post(header).status == 400   # binary_data_size without the header


def test_body_too_large(client):
    r = client.request("POST", "/v2/models/motionbricks/infer", body=b" " * ((4 << 20) + 1))
    assert r.status == 413 and "bytes" in error_of(r)
    body = json.dumps({"inputs": [{"name": "local_poses", "shape": [1, 1 << 30], "datatype": "FP32", "data": []}]})
    r = client.request("POST", "/v2/models/motionbricks/infer", body=body.encode())
    assert r.status == 413 and "elements" in error_of(r)


def test_origin(client):
    r = client.request("GET", "/v2/health/live", headers={"Origin": "http://evil.example"})
    assert r.status == 403


def test_too_many_requests():
    # a queue of one and a long window: the first plan waits, the second finds the queue full
    with Server(BUNDLE, None, ["--max-queue", "1", "--batch-window-ms", "400"]) as s:
        first = {}
        t = threading.Thread(target=lambda: first.update(r=s.client().infer_raw("motionbricks", simple_inputs())))
        t.start()
        time.sleep(0.15)
        c = s.client()
        r = c.infer_raw("motionbricks", simple_inputs())
        t.join()
        assert r.status == 429 and "queue" in error_of(r)
        assert first["r"].status == 200
        # the agent model is absent without styles
        assert c.request("GET", "/v2/models/motionbricks-agent").status == 404
        m = c.request("GET", "/metrics").body.decode()
        assert 'motionbricks_requests_total{model="motionbricks",code="429"} 1' in m


def test_too_many_connections():
    with Server(BUNDLE, None, ["--max-connections", "2"]) as s:
        a, b, c = s.client(), s.client(), s.client()
        assert a.is_server_live() and b.is_server_live()
        r = c.request("GET", "/v2/health/live")
        assert r.status == 503 and "connections" in error_of(r)


# ---- agent sessions ---------------------------------------------------------------------------

def test_agent_session_carries_state(client):
    style = np.array(["walk"], np.object_)
    move = np.array([[0.0, 0.0, 1.0]], np.float32)
    _, first = client.infer("motionbricks-agent", {"style": style, "movement_direction": move}, binary_outputs=True)
    n = int(first["num_frames"][0])
    assert first["context_root_xyz"].shape == (1, n, 3)
    # the next plan from the first one's frame 16: the same answer on any replica, given the same context
    nxt = {"style": style, "movement_direction": move, "context_root_xyz": first["context_root_xyz"],
           "context_local_rotations_xyzw": first["context_local_rotations_xyzw"], "context_advance": np.array([16], np.int32)}
    _, a = client.infer("motionbricks-agent", nxt, binary_outputs=True)
    _, b = client.infer("motionbricks-agent", nxt, binary_inputs=True, binary_outputs=True)
    assert np.array_equal(a["joint_positions"], b["joint_positions"])
    # it starts on the ground where the first plan's frame 16 was (random weights: the height is not kept)
    assert np.allclose(a["root_translations"][0, 0, [0, 2]], first["root_translations"][0, 16, [0, 2]], atol=0.05)
    bad = dict(nxt)
    bad["context_local_rotations_xyzw"] = np.zeros_like(first["context_local_rotations_xyzw"])
    r = client.infer_raw("motionbricks-agent", bad)
    assert r.status == 400 and "context" in error_of(r)
    r = client.infer_raw("motionbricks-agent", {"style": np.array(["moonwalk"], np.object_)})
    assert r.status == 400 and "moonwalk" in error_of(r)


# ---- metrics -----------------------------------------------------------------------------------

def test_metrics(client):
    client.infer("motionbricks", simple_inputs())
    r = client.request("GET", "/metrics")
    assert r.status == 200 and r.headers["content-type"].startswith("text/plain")
    text = r.body.decode()
    for name in ("motionbricks_requests_total", "motionbricks_plans_total", "motionbricks_queue_seconds_bucket",
                 "motionbricks_compute_seconds_bucket", "motionbricks_request_seconds_bucket", "motionbricks_batch_size_bucket",
                 "motionbricks_in_flight_requests", "motionbricks_model_load_seconds", "motionbricks_weights_resident_bytes",
                 "motionbricks_device_info"):
        assert metric_lines(text, name), name
    assert 'motionbricks_requests_total{model="motionbricks",code="400"}' in text
    assert 'motionbricks_device_info{device="cpu",precision="f32"} 1' in text
    assert int(metric_lines(text, "motionbricks_weights_resident_bytes")[-1].split()[-1]) > 0
    h = histogram_counts(text, "motionbricks_request_seconds")
    assert h["+Inf"] >= 1
    # every sample line is "name{labels} value"
    for line in text.splitlines():
        if line and not line.startswith("#"):
            float(line.rsplit(" ", 1)[1])
