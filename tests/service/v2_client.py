"""A minimal Open Inference Protocol v2 (KServe v2 REST) client, written from the protocol text
only (python stdlib + numpy): health, server and model metadata, and inference with the JSON
tensor encoding or the binary tensor data extension. It knows nothing of the server under test
beyond what the protocol says, so that the tests check the protocol, not our own encoder."""

import http.client
import json
import struct

import numpy as np

# the protocol's tensor datatypes and their numpy equivalents
DATATYPES = {
    "BOOL": np.bool_, "UINT8": np.uint8, "UINT16": np.uint16, "UINT32": np.uint32, "UINT64": np.uint64,
    "INT8": np.int8, "INT16": np.int16, "INT32": np.int32, "INT64": np.int64,
    "FP16": np.float16, "FP32": np.float32, "FP64": np.float64, "BYTES": np.object_,
}


def datatype_of(array):
    if array.dtype == np.object_ or array.dtype.kind in "SU":
        return "BYTES"
    for name, t in DATATYPES.items():
        if t is not np.object_ and array.dtype == np.dtype(t):
            return name
    raise ValueError("no v2 datatype for %s" % array.dtype)


def _bytes_elements(array):
    out = []
    for e in array.reshape(-1):
        out.append(e.encode() if isinstance(e, str) else bytes(e))
    return out


def _raw(array, datatype):
    """the binary tensor data of an array: little-endian, row-major; BYTES length-prefixed"""
    if datatype == "BYTES":
        return b"".join(struct.pack("<I", len(e)) + e for e in _bytes_elements(array))
    return np.ascontiguousarray(array, dtype=np.dtype(DATATYPES[datatype]).newbyteorder("<")).tobytes()


def _from_raw(raw, datatype, shape):
    if datatype == "BYTES":
        out, at = [], 0
        while at < len(raw):
            (n,) = struct.unpack_from("<I", raw, at)
            out.append(raw[at + 4: at + 4 + n])
            at += 4 + n
        return np.array(out, dtype=np.object_).reshape(shape)
    return np.frombuffer(raw, dtype=np.dtype(DATATYPES[datatype]).newbyteorder("<")).reshape(shape).copy()


class Response:
    def __init__(self, status, headers, body):
        self.status = status
        self.headers = headers
        self.body = body

    def json(self):
        return json.loads(self.body.decode())


class InferError(Exception):
    def __init__(self, status, message):
        super().__init__("HTTP %d: %s" % (status, message))
        self.status = status
        self.message = message


class Client:
    """one keep-alive connection to host:port"""

    def __init__(self, host, port, timeout=60):
        self.host, self.port, self.timeout = host, port, timeout
        self.conn = None
        self.retry = True   # one retry when a kept-alive connection turns out closed

    def close(self):
        if self.conn is not None:
            self.conn.close()
            self.conn = None

    def request(self, method, path, body=None, headers=None):
        for attempt in (0, 1):
            if self.conn is None:
                self.conn = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)
            try:
                self.conn.request(method, path, body=body, headers=headers or {})
                r = self.conn.getresponse()
                data = r.read()
                hdrs = {k.lower(): v for k, v in r.getheaders()}
                if hdrs.get("connection", "").lower() == "close":
                    self.close()
                return Response(r.status, hdrs, data)
            except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError):
                # a keep-alive connection the server closed while idle: one retry on a new one
                self.close()
                if attempt == 1 or not self.retry:
                    raise

    # ---- health and metadata (protocol: 200 is true, 4xx false) ----

    def is_server_live(self):
        return self.request("GET", "/v2/health/live").status == 200

    def is_server_ready(self):
        return self.request("GET", "/v2/health/ready").status == 200

    def is_model_ready(self, model):
        return self.request("GET", "/v2/models/%s/ready" % model).status == 200

    def server_metadata(self):
        return self._json_or_raise(self.request("GET", "/v2"))

    def model_metadata(self, model, version=None):
        path = "/v2/models/%s" % model + ("/versions/%s" % version if version else "")
        return self._json_or_raise(self.request("GET", path))

    @staticmethod
    def _json_or_raise(r):
        if r.status != 200:
            raise InferError(r.status, Client._error_text(r))
        return r.json()

    @staticmethod
    def _error_text(r):
        try:
            return r.json()["error"]
        except Exception:
            return r.body[:200].decode(errors="replace")

    # ---- inference ----

    def infer_raw(self, model, inputs, outputs=None, binary_inputs=False, binary_outputs=False, request_id=None):
        """POST an inference request; inputs: {name: numpy array}; returns the raw Response"""
        tensors, blobs = [], []
        for name, array in inputs.items():
            array = np.asarray(array)
            dt = datatype_of(array)
            t = {"name": name, "shape": list(array.shape), "datatype": dt}
            if binary_inputs:
                raw = _raw(array, dt)
                t["parameters"] = {"binary_data_size": len(raw)}
                blobs.append(raw)
            elif dt == "BYTES":
                t["data"] = [e.decode() for e in _bytes_elements(array)]
            elif dt == "BOOL":
                t["data"] = [bool(v) for v in array.reshape(-1)]
            elif dt.startswith("FP"):
                t["data"] = [float(v) for v in array.reshape(-1)]
            else:
                t["data"] = [int(v) for v in array.reshape(-1)]
            tensors.append(t)
        req = {"inputs": tensors}
        if request_id is not None:
            req["id"] = request_id
        if outputs is not None:
            req["outputs"] = [{"name": n, "parameters": {"binary_data": binary_outputs}} for n in outputs]
        elif binary_outputs:
            req["parameters"] = {"binary_data_output": True}
        header = json.dumps(req).encode()
        headers = {"Content-Type": "application/json"}
        body = header
        if binary_inputs:
            body = header + b"".join(blobs)
            headers = {"Content-Type": "application/octet-stream", "Inference-Header-Content-Length": str(len(header))}
        return self.request("POST", "/v2/models/%s/infer" % model, body=body, headers=headers)

    def infer(self, model, inputs, **kw):
        """as infer_raw; returns (response JSON, {name: numpy array}); raises InferError"""
        r = self.infer_raw(model, inputs, **kw)
        if r.status != 200:
            raise InferError(r.status, self._error_text(r))
        return parse_infer_response(r)


def parse_infer_response(r):
    """a v2 inference response (JSON, or JSON header + binary data) → (header JSON, {name: array})"""
    body = r.body
    n = r.headers.get("inference-header-content-length")
    if n is not None:
        header, rest = json.loads(body[: int(n)].decode()), body[int(n):]
    else:
        header, rest = json.loads(body.decode()), b""
    out = {}
    for t in header["outputs"]:
        shape = tuple(t["shape"])
        size = (t.get("parameters") or {}).get("binary_data_size")
        if size is not None:
            out[t["name"]] = _from_raw(rest[:size], t["datatype"], shape)
            rest = rest[size:]
        else:
            data = t["data"]
            if t["datatype"] == "BYTES":
                out[t["name"]] = np.array(data, dtype=np.object_).reshape(shape)
            else:
                out[t["name"]] = np.array(data, dtype=DATATYPES[t["datatype"]]).reshape(shape)
    if rest:
        raise ValueError("%d bytes after the last binary output" % len(rest))
    return header, out
