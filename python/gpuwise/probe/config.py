"""The probe's settings, read from the environment doctor set (see the package docstring)."""


def _int_env(env, name, default, minimum):
    try:
        v = int(env.get(name, "") or default)
    except ValueError:
        return default
    return max(minimum, v)


def _float_env(env, name, default):
    try:
        v = float(env.get(name, "") or default)
    except ValueError:
        return default
    return max(0.0, v)


def _first_int(env, names):
    for n in names:
        v = env.get(n)
        if v not in (None, ""):
            try:
                return int(v)
            except ValueError:
                pass
    return None
