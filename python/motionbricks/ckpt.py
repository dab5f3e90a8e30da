"""Safe reader for PyTorch zip checkpoints (torch.save, PyTorch Lightning .ckpt).

A zip archive <root>/data.pkl (pickle protocol 2) whose persistent ids
('storage', <storage class>, key, location, numel) name raw little-endian
storages <root>/data/<key>. The unpickler below never imports or calls anything
from the pickle: find_class only ever returns this module's own inert classes
or its own rebuild functions, so tensors and plain containers are rebuilt and
every other object (optimizer classes, os.system, ...) becomes inert data that
records its name and arguments and cannot run.
"""

import io
import pickle
import zipfile
import zlib

import numpy as np

from .errors import ConvertError
from .safetensors import LazyTensor

# storage classes torch writes, by dtype (safetensors spelling)
STORAGE_DTYPES = {
    "DoubleStorage": "F64", "FloatStorage": "F32", "HalfStorage": "F16", "BFloat16Storage": "BF16",
    "LongStorage": "I64", "IntStorage": "I32", "ShortStorage": "I16", "CharStorage": "I8",
    "ByteStorage": "U8", "BoolStorage": "BOOL",
}
_NP = {
    "F64": np.dtype("<f8"), "F32": np.dtype("<f4"), "F16": np.dtype("<f2"), "BF16": np.dtype("<u2"),
    "I64": np.dtype("<i8"), "I32": np.dtype("<i4"), "I16": np.dtype("<i2"), "I8": np.dtype("i1"),
    "U8": np.dtype("u1"), "BOOL": np.dtype("?"),
}
# torch.float32 style dtype objects (torch >= 2 may reference them in typed storages)
_TORCH_DTYPE_NAMES = {
    "float64": "F64", "double": "F64", "float32": "F32", "float": "F32", "float16": "F16", "half": "F16",
    "bfloat16": "BF16", "int64": "I64", "long": "I64", "int32": "I32", "int": "I32", "int16": "I16",
    "short": "I16", "int8": "I8", "uint8": "U8", "bool": "BOOL",
}

MAX_PICKLE_BYTES = 256 * 1024 * 1024
MAX_PLAIN_NODES = 1000000


class Inert:
    """Any object the pickle asks for that is not a tensor or container: it only
    records what it was given."""

    _inert_name = "?"

    def __new__(cls, *args, **kwargs):
        obj = object.__new__(cls)
        obj.args = args
        obj.state = None
        obj.items = {}
        obj.list = []
        return obj

    def __init__(self, *args, **kwargs):
        pass

    def __setstate__(self, state):
        self.state = state

    def __setitem__(self, key, value):
        self.items[key] = value

    def append(self, value):
        self.list.append(value)

    def extend(self, values):
        self.list.extend(values)

    def __repr__(self):
        return "<inert %s>" % self._inert_name


_inert_classes = {}


def _inert_class(module, name):
    key = module + "." + name
    cls = _inert_classes.get(key)
    if cls is None:
        cls = type("Inert_" + name, (Inert,), {"_inert_name": key})
        _inert_classes[key] = cls
    return cls


class StorageType:
    def __init__(self, dtype):
        self.dtype = dtype


class Storage:
    def __init__(self, key, dtype, numel):
        self.key = key
        self.dtype = dtype
        self.numel = numel


class TensorRef:
    """A tensor of the checkpoint: storage, offset, shape, stride (elements)."""

    def __init__(self, storage, offset, shape, stride):
        self.storage = storage
        self.offset = offset
        self.shape = shape
        self.stride = stride


def _int_tuple(v, what):
    if not isinstance(v, (tuple, list)) or not all(type(x) is int for x in v):
        raise ConvertError("checkpoint: bad tensor %s %r" % (what, v))
    return tuple(v)


def _check_layout(size, stride, storage_numel):
    """Refuses a layout in which two indices reach the same element (stride 0 = torch.expand, or
    rows that overlap): it would let a few stored bytes expand into any amount of output. The
    accepted layouts are the dense or gapped ones up to a permutation of the dimensions: sorted by
    stride, each stride is at least the extent the smaller ones cover. Size-1 dimensions have no
    stride to speak of; an empty tensor has no elements."""
    numel = 1
    for d in size:
        numel *= d
    if numel == 0:
        return
    extent = 1   # elements spanned by the dimensions taken so far
    for s, d in sorted((s, d) for d, s in zip(size, stride) if d > 1):
        if s < extent:
            raise ConvertError("checkpoint: tensor of size %r / stride %r has overlapping elements "
                               "(an expanded or aliased view); save it with .contiguous()" % (size, stride))
        extent += s * (d - 1)
    if numel > storage_numel:
        raise ConvertError("checkpoint: tensor of size %r (%d elements) exceeds its storage (%d elements)"
                           % (size, numel, storage_numel))


def _rebuild_tensor(storage, storage_offset, size, stride, *rest):
    if not isinstance(storage, Storage):
        raise ConvertError("checkpoint: tensor rebuilt from something that is not a storage")
    if type(storage_offset) is not int or storage_offset < 0:
        raise ConvertError("checkpoint: bad storage offset %r" % (storage_offset,))
    size = _int_tuple(size, "size")
    stride = _int_tuple(stride, "stride")
    if len(size) != len(stride) or any(d < 0 for d in size) or any(s < 0 for s in stride):
        raise ConvertError("checkpoint: bad tensor size %r / stride %r" % (size, stride))
    last = storage_offset
    if all(d > 0 for d in size):
        last += sum((d - 1) * s for d, s in zip(size, stride))
        if last >= storage.numel and size:
            raise ConvertError("checkpoint: tensor of size %r exceeds its storage (%d elements)"
                               % (size, storage.numel))
        if not size and storage_offset >= storage.numel:
            raise ConvertError("checkpoint: scalar tensor outside its storage")
    _check_layout(size, stride, storage.numel)
    return TensorRef(storage, storage_offset, size, stride)


def _rebuild_parameter(data, *rest):
    return data


def _codecs_encode(text, encoding="latin1"):
    # protocol 2 pickles bytes as _codecs.encode(str, 'latin1')
    if not isinstance(text, str) or encoding not in ("latin1", "latin-1"):
        raise ConvertError("checkpoint: unexpected _codecs.encode call")
    return text.encode("latin1")


def _ordered_dict(*args):
    d = {}
    if args:
        for k, v in args[0]:
            d[k] = v
    return d


class _OrderedDict(dict):
    pass


_ALLOWED = {
    ("torch._utils", "_rebuild_tensor_v2"): _rebuild_tensor,
    ("torch._utils", "_rebuild_tensor"): _rebuild_tensor,
    ("torch._utils", "_rebuild_parameter"): _rebuild_parameter,
    ("torch._utils", "_rebuild_parameter_with_state"): _rebuild_parameter,
    ("collections", "OrderedDict"): _OrderedDict,
    ("_codecs", "encode"): _codecs_encode,
}


class _RestrictedUnpickler(pickle.Unpickler):
    def __init__(self, data, storages):
        super().__init__(io.BytesIO(data))
        self._storages = storages   # key -> member size in bytes

    def find_class(self, module, name):
        fn = _ALLOWED.get((module, name))
        if fn is not None:
            return fn
        if module == "torch" and name in STORAGE_DTYPES:
            return StorageType(STORAGE_DTYPES[name])
        # everything else is inert: never imported, never called for real
        return _inert_class(str(module), str(name))

    def persistent_load(self, pid):
        if not isinstance(pid, tuple) or len(pid) != 5 or pid[0] != "storage":
            what = pid[:1] if isinstance(pid, tuple) else pid
            raise ConvertError("checkpoint: unsupported persistent id %r" % (what,))
        _, stype, key, _location, numel = pid
        if isinstance(stype, StorageType):
            dtype = stype.dtype
        elif isinstance(stype, Inert) and stype._inert_name.startswith("torch.") and \
                stype._inert_name[6:] in _TORCH_DTYPE_NAMES:
            dtype = _TORCH_DTYPE_NAMES[stype._inert_name[6:]]
        else:
            raise ConvertError("checkpoint: storage %r has an unknown storage type" % (key,))
        if not isinstance(key, str) or key not in self._storages:
            raise ConvertError("checkpoint: storage %r is not in the archive" % (key,))
        nbytes = self._storages[key]
        itemsize = _NP[dtype].itemsize
        if type(numel) is not int or numel < 0 or numel * itemsize != nbytes:
            # numel of typed storages is in elements; trust the archive member size
            if nbytes % itemsize:
                raise ConvertError("checkpoint: storage %r size %d is not a multiple of %d" % (key, nbytes, itemsize))
        return Storage(key, dtype, nbytes // itemsize)


def _find_root(zf):
    roots = set()
    for n in zf.namelist():
        if n.endswith("/data.pkl") and n.count("/") == 1:
            roots.add(n.split("/")[0])
    if len(roots) != 1:
        raise ConvertError("not a PyTorch zip checkpoint (found %d data.pkl roots)" % len(roots))
    return roots.pop()


def load_checkpoint(path):
    """The unpickled object of a zip-format torch checkpoint, with TensorRef for
    tensors, dicts/lists for containers and Inert for everything else, plus a
    function that materialises a TensorRef as a numpy array."""
    try:
        zf = zipfile.ZipFile(path)
    except (OSError, zipfile.BadZipFile) as e:
        raise ConvertError("%s: not a zip-format PyTorch checkpoint (%s); legacy torch.save files "
                           "are not supported" % (path, e))
    root = _find_root(zf)
    storages = {}
    for info in zf.infolist():
        prefix = root + "/data/"
        if info.filename.startswith(prefix) and "/" not in info.filename[len(prefix):]:
            storages[info.filename[len(prefix):]] = info.file_size
    pkl = zf.getinfo(root + "/data.pkl")
    if pkl.file_size > MAX_PICKLE_BYTES:
        raise ConvertError("%s: data.pkl is %d bytes, more than the %d allowed" % (path, pkl.file_size,
                                                                                     MAX_PICKLE_BYTES))
    try:
        data = zf.read(pkl)
    except (zipfile.BadZipFile, OSError, EOFError, zlib.error) as e:
        raise ConvertError("%s: cannot read data.pkl: %s" % (path, e))
    try:
        obj = _RestrictedUnpickler(data, storages).load()
    except ConvertError as e:
        raise ConvertError("%s: %s" % (path, e))
    except Exception as e:   # malformed pickle: report, never crash
        raise ConvertError("%s: cannot read data.pkl: %s: %s" % (path, type(e).__name__, e))

    def materialise(ref):
        # read only the span the tensor covers (seekable for the stored members torch writes)
        st = ref.storage
        dt = _NP[st.dtype]
        if any(d == 0 for d in ref.shape):
            return np.zeros(ref.shape, dtype=dt)
        last = ref.offset + sum((d - 1) * s for d, s in zip(ref.shape, ref.stride))
        try:
            with zf.open(root + "/data/" + st.key) as f:
                f.seek(ref.offset * dt.itemsize)
                raw = f.read((last + 1 - ref.offset) * dt.itemsize)
        except (zipfile.BadZipFile, OSError, EOFError, zlib.error) as e:
            raise ConvertError("%s: cannot read storage %s: %s" % (path, st.key, e))
        if len(raw) != (last + 1 - ref.offset) * dt.itemsize:
            raise ConvertError("%s: storage %s is shorter than its tensor" % (path, st.key))
        buf = np.frombuffer(raw, dtype=dt)
        view = np.lib.stride_tricks.as_strided(buf, shape=ref.shape,
                                               strides=tuple(s * dt.itemsize for s in ref.stride))
        return view.copy(order="C")

    return obj, materialise


def state_dict_tensors(path):
    """({name: LazyTensor}, hyper_parameters or None) of a Lightning checkpoint
    (or a bare state dict saved with torch.save)."""
    obj, materialise = load_checkpoint(path)
    if isinstance(obj, dict) and "state_dict" in obj:
        sd = obj["state_dict"]
        hp = obj.get("hyper_parameters")
    else:
        sd = obj
        hp = None
    if not isinstance(sd, dict):
        raise ConvertError("%s: state_dict is not a dictionary" % path)
    out = {}
    for name, ref in sd.items():
        if not isinstance(name, str):
            raise ConvertError("%s: state_dict key %r is not a string" % (path, name))
        if not isinstance(ref, TensorRef):
            raise ConvertError("%s: state_dict entry %r is not a tensor" % (path, name))
        out[name] = LazyTensor(ref.shape, ref.storage.dtype, (lambda r=ref: materialise(r)))
    return out, hp


def plain(obj):
    """Inert containers (Lightning AttributeDict, OmegaConf DictConfig, ...) seen as
    plain dicts where possible, for reading hyper-parameters. Shared and cyclic
    references are visited once (a cycle reads as None), and the walk is bounded."""
    memo = {}
    limit = MAX_PLAIN_NODES
    budget = [limit]

    def walk(o):
        if isinstance(o, (str, bytes, int, float, bool, type(None))):
            return o
        key = id(o)
        if key in memo:
            return memo[key]
        budget[0] -= 1
        if budget[0] < 0:
            raise ConvertError("checkpoint: hyper_parameters hold more than %d objects" % limit)
        memo[key] = None     # a cycle back to here reads as None
        if isinstance(o, dict):
            out = {}
            memo[key] = out
            for k, v in o.items():
                out[k] = walk(v)
        elif isinstance(o, (list, tuple)):
            out = [walk(v) for v in o]
        elif isinstance(o, Inert):
            out = None
            st = o.state
            if isinstance(st, tuple) and st and isinstance(st[-1], dict):
                st = st[-1]
            if o.items:
                out = walk(o.items)
            elif isinstance(st, dict):
                if "_content" in st:      # omegaconf DictConfig / ListConfig
                    out = walk(st["_content"])
                elif "_val" in st:        # omegaconf value node
                    out = walk(st["_val"])
                else:
                    out = walk(st)
            elif o.list:
                out = walk(o.list)
        else:
            out = None
        memo[key] = out
        return out

    try:
        return walk(obj)
    except RecursionError:
        raise ConvertError("checkpoint: hyper_parameters are nested too deeply")
