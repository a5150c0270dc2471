"""Reading the batch off what the loop hands around (a DataLoader's batch, the outermost module's input) without
calling into the tensors: only plain `torch.Tensor`s are read, through `.shape` and `.dtype`, which for them run no
Python code (no `__torch_function__`, no tracer, nothing that can warn). A tensor subclass, a tensor under an active
`__torch_function__` mode or anything read while torch.jit traces is left unread (its size is unknown). The structure
around them (lists, tuples, dicts and their subclasses) is walked through the base types' C methods (safe.py): a
batch class's own `__getitem__`, `values()` or `get()` never runs, so a batch that tracks its reads sees none."""
from . import safe

# Modules that read a `batch_first` flag: their input is [seq, batch, ...] when it is False (torch's default).
_SEQ_FIRST_CLASSES = ("RNNBase", "RNN", "LSTM", "GRU", "Transformer", "TransformerEncoderLayer", "TransformerDecoderLayer", "MultiheadAttention")


class BatchReader(object):
    """Shapes of the plain tensors in a batch, for one torch module."""

    def __init__(self, torch):
        self.tensor_type = torch.Tensor
        self.bool_dtype = torch.bool
        c = torch._C
        self._tracing = getattr(c, "_get_tracing_state", None)
        self._mode_on = getattr(c, "_is_torch_function_mode_enabled", None)

    def readable(self):
        """False while torch.jit traces (shapes would become graph nodes) or a torch function mode is active."""
        if self._tracing is not None and self._tracing() is not None:
            return False
        return not (self._mode_on is not None and self._mode_on())

    def first_plain(self, batch):
        """The first tensor of a batch (itself, or the first element of a list, tuple or dict, up to 4 levels) when
        it is a plain tensor; None otherwise (no tensor, or a subclass: not read)."""
        t = self.tensor_type
        for _ in range(4):
            if type(batch) is t:
                return batch
            if safe.is_sequence(batch):
                batch = safe.first(batch)
            elif safe.is_dict(batch):
                vals = safe.values(batch)
                batch = vals[0] if vals else None
            else:
                return None
        return None

    def size(self, batch, dim=0):
        """Dimension `dim` (the leading one by default) of the batch's first tensor; None when it cannot be told."""
        x = self.first_plain(batch)
        if x is None:
            return None
        shape = x.shape
        return shape[dim] if len(shape) > dim else None

    def tokens(self, batch, batch_dim=0):
        """(token positions, sequence length) when the batch holds token ids: a dict's `input_ids`, or the first 2-D
        integer tensor found (samples x sequence, or sequence x samples when `batch_dim` is 1); None otherwise."""
        t = self.tensor_type
        found = safe.get(batch, "input_ids")
        if found is None:
            todo = [batch]
            for _ in range(16):
                if not todo:
                    break
                x = todo.pop(0)
                if type(x) is t:
                    d = x.dtype
                    if len(x.shape) == 2 and not d.is_floating_point and not d.is_complex and d is not self.bool_dtype:
                        found = x
                        break
                elif safe.is_sequence(x):
                    todo.extend(safe.head(x, 4))
                elif safe.is_dict(x):
                    todo.extend(safe.values(x)[:4])
        if type(found) is t:
            shape = found.shape
            if len(shape) == 2:
                return shape[0] * shape[1], shape[1 - batch_dim]
        return None

    def first_argument(self, args, kwargs):
        """The first plain tensor among a forward call's arguments (positional first, then keyword), looking one level
        into lists, tuples and dicts (a batch passed as one structure)."""
        t = self.tensor_type
        for x in safe.head(args, 64) + safe.values(kwargs):
            if type(x) is t:
                return x
            if safe.is_sequence(x):
                x0 = safe.first(x)
                if type(x0) is t:
                    return x0
            elif safe.is_dict(x):
                for v in safe.values(x):
                    if type(v) is t:
                        return v
        return None


def batch_dim_of(root):
    """(dimension of the batch in the root's input, what showed it, the sequence-first module): 1 when the first module of
    the model that reads a `batch_first` flag (the root itself, an RNN, LSTM, GRU, a Transformer layer,
    MultiheadAttention) has it False, as torch's default: its input is [seq, batch, ...]. One walk over the modules,
    when the root is found."""
    try:
        for _, m in safe.named_modules(root):
            flag = safe.attr(m, "batch_first")  # the instance's or its class's value: never a property's
            if type(flag) is not bool:
                continue
            if m is not root and not any(c in _SEQ_FIRST_CLASSES for c in safe.class_names(m)):
                continue
            return (0 if flag else 1), "%s(batch_first=%s)" % (safe.type_name(m), flag), (None if flag else m)
    except Exception:
        pass
    return 0, None, None
