"""Reading the batch off what the loop hands around: a DataLoader's batch, the outermost module's input."""

# Modules that read a `batch_first` flag: their input is [seq, batch, ...] when it is False (torch's default).
_SEQ_FIRST_CLASSES = ("RNNBase", "RNN", "LSTM", "GRU", "Transformer", "TransformerEncoderLayer", "TransformerDecoderLayer", "MultiheadAttention")


def _first_tensor(torch, args, kwargs):
    """The first tensor argument of a forward call (positional first, then keyword), looking one level
    into lists, tuples and dicts (a batch passed as one structure)."""
    for x in list(args) + list((kwargs or {}).values()):
        if isinstance(x, torch.Tensor):
            return x
        if isinstance(x, (list, tuple)) and x and isinstance(x[0], torch.Tensor):
            return x[0]
        if isinstance(x, dict):
            for v in x.values():
                if isinstance(v, torch.Tensor):
                    return v
    return None


def _batch_dim_of(root):
    """(dimension of the batch in the root's input, what showed it, the sequence-first module): 1 when the first module of the model that reads
    a `batch_first` flag (the root itself, an RNN, LSTM, GRU, a Transformer layer, MultiheadAttention) has it False,
    as torch's default: its input is [seq, batch, ...]. One walk over the modules, when the root is found."""
    try:
        for _, m in root.named_modules():
            flag = getattr(m, "batch_first", None)
            if not isinstance(flag, bool):
                continue
            if m is not root and not any(c.__name__ in _SEQ_FIRST_CLASSES for c in type(m).__mro__):
                continue
            return (0 if flag else 1), "%s(batch_first=%s)" % (type(m).__name__, flag), (None if flag else m)
    except Exception:
        pass
    return 0, None, None


def _batch_size(torch, batch, dim=0):
    """Dimension `dim` (the leading one by default) of the first tensor in the batch, or None when it cannot be told."""
    for _ in range(4):
        if isinstance(batch, torch.Tensor):
            return int(batch.shape[dim]) if batch.dim() > dim else None
        if isinstance(batch, (list, tuple)) and batch:
            batch = batch[0]
        elif isinstance(batch, dict) and batch:
            batch = next(iter(batch.values()))
        else:
            return None
    return None


def _batch_tokens(torch, batch, batch_dim=0):
    """(token positions, sequence length) when the batch holds token ids: a dict's `input_ids`, or the
    first 2-D integer tensor found (samples x sequence, or sequence x samples when `batch_dim` is 1);
    None otherwise. Shapes only: no GPU sync."""
    t = None
    if isinstance(batch, dict):
        t = batch.get("input_ids")
    if t is None:
        todo = [batch]
        for _ in range(16):
            if not todo:
                break
            x = todo.pop(0)
            if isinstance(x, torch.Tensor):
                if x.dim() == 2 and not x.is_floating_point() and not x.is_complex() and x.dtype != torch.bool:
                    t = x
                    break
            elif isinstance(x, (list, tuple)):
                todo.extend(x[:4])
            elif isinstance(x, dict):
                todo.extend(list(x.values())[:4])
    if isinstance(t, torch.Tensor) and t.dim() == 2:
        return int(t.numel()), int(t.shape[1 - batch_dim])
    return None
