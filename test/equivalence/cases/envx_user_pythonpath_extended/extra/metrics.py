def _total(v):
    return sum(_total(x) for x in v) if isinstance(v, list) else abs(v)


def score(state):
    """The sum of absolute values of nested lists of numbers (weights or samples), without torch."""
    return sum(_total(v) for v in state.values())
