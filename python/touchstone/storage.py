"""Element types as fixtures store them (docs/fixture-format.md "Element types"): torch or numpy
in, numpy as stored out, and back."""
import numpy as np

from . import tables, transfer
from .schema import CaptureError

BF16, F16 = tables.BFLOAT16, tables.FLOAT16
# numpy's own types under the names fixtures give them (every type but bfloat16).
_NATIVE = {np.dtype(name): name for name in tables.DTYPES if name != BF16}


def is_torch(x):
    return type(x).__module__.startswith("torch")


def to_storage(x, bf16_bits=False):
    """(numpy array as stored, dtype name) for a torch tensor or numpy array. bfloat16 becomes
    its uint16 bits. bf16_bits: a numpy uint16 array already holds bfloat16 bit patterns."""
    if is_torch(x):
        import torch

        t = transfer.to_host(x.detach(), torch)
        if t.dtype == torch.bfloat16:
            return t.view(torch.int16).numpy().view(np.uint16), BF16
        x = t.numpy()
    a = np.ascontiguousarray(np.asarray(x))
    if a.dtype.name == "bfloat16":  # ml_dtypes / jax numpy bfloat16 (numpy's name, not the table's)
        return a.view(np.uint16), BF16
    if a.dtype == np.uint16:
        if not bf16_bits:
            raise CaptureError("uint16 array: pass bf16_bits=True if it holds bfloat16 bits")
        return a, BF16
    if a.dtype not in _NATIVE:
        raise CaptureError(f"unsupported element type {a.dtype} (expected {', '.join(tables.DTYPES)})")
    return a, _NATIVE[a.dtype]


def bf16_bits_to_float32(bits):
    return (np.asarray(bits, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)


def float32_to_bf16_bits(a):
    """Round-to-nearest-even float32 -> bfloat16 bits (NaN kept quiet), as torch does."""
    u = np.ascontiguousarray(a, dtype=np.float32).view(np.uint32).astype(np.uint64)
    rounded = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    nan = np.isnan(np.asarray(a, dtype=np.float32))
    return np.where(nan, ((u >> 16) | 0x40).astype(np.uint16), rounded)


def storage_dtype(ds):
    """The element type a dataset holds: bfloat16 (or float16 as bits) by attribute, else numpy's
    name."""
    tag = ds.attrs.get(tables.DTYPE_ATTRIBUTE)
    if isinstance(tag, bytes):
        tag = tag.decode()
    if tag in tables.UINT16_DTYPES:
        if ds.dtype != np.uint16:
            raise CaptureError(f"{ds.file.filename}: {ds.name}: {tables.DTYPE_ATTRIBUTE} attribute "
                               f"{tag!r} on a {ds.dtype} dataset (expected uint16)")
        return tag
    if ds.dtype == np.uint16:
        raise CaptureError(f"{ds.file.filename}: {ds.name}: uint16 without "
                           f"{tables.DTYPE_ATTRIBUTE}=\"{BF16}\"")
    return ds.dtype.name


def read_stored(ds):
    """A dataset's values as stored (bfloat16 as its uint16 bits), read once. A contiguous,
    unfiltered, little-endian dataset of a file on disk is mapped copy-on-write instead of read:
    the page cache's own pages, no fresh buffer to fault in (at block24 an h5py read into new
    memory cost 1.9 s per 542 MB tensor on the 2-core machine, the mapping 0.3 s), and a kernel
    that writes into its inputs changes only its private copy. Writers replace files by rename,
    so a mapped file's contents never change under it."""
    try:
        offset = ds.id.get_offset()
        plain = (offset is not None and ds.chunks is None and ds.compression is None
                 and ds.dtype.byteorder in "=<|" and ds.size > 0 and ds.file.driver == "sec2")
    except (TypeError, ValueError, OSError):
        plain = False
    if not plain:
        return ds[()]
    return np.memmap(ds.file.filename, dtype=ds.dtype, mode="c", offset=offset, shape=ds.shape)


def read_array(ds):
    """A dataset's values as numpy: bfloat16 as float32 (exact), the rest as stored."""
    return stored_to_array(ds, read_stored(ds))


def stored_to_array(ds, a):
    """read_array of values `a` already read from `ds` as stored (read once, digest and value)."""
    kind = storage_dtype(ds)
    if kind == BF16:
        return bf16_bits_to_float32(a)
    if kind == F16 and a.dtype == np.uint16:
        return a.view(np.float16)
    return a


def to_torch(ds, torch, a=None):
    """A dataset as a torch tensor in its storage type (bfloat16 stays bfloat16); `a`: its values
    already read as stored (read once, digest and value)."""
    kind = storage_dtype(ds)
    a = read_stored(ds) if a is None else a
    if kind == BF16:
        return torch.from_numpy(np.ascontiguousarray(a).view(np.int16)).view(torch.bfloat16)
    if kind == F16 and a.dtype == np.uint16:
        a = a.view(np.float16)
    return torch.from_numpy(np.ascontiguousarray(a))


def cast_like(x, kind):
    """x (torch or numpy) converted to storage type `kind` (what add_output stores)."""
    if is_torch(x):
        import torch

        return to_storage(x.detach().to(getattr(torch, kind)))  # torch names its types alike
    a = np.asarray(x)
    if kind == BF16:
        if a.dtype == np.uint16:
            return to_storage(a, bf16_bits=True)
        return float32_to_bf16_bits(a.astype(np.float32)), BF16
    return to_storage(a.astype(kind))
