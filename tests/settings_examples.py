"""Valid and invalid values of a declared `Setting`, derived from its declaration alone.

Tests take their examples from here instead of naming one ("rmsprop" is not an optimizer), so a
setting added, renamed or given another range keeps being tested with values that fit it.
"""

from d2lmini.settings import Setting


def valid_values(setting: Setting) -> list:
    """Values `setting` accepts: its choices, its menu, its bounds and a point between, None if optional."""
    if setting.choices:
        values = list(setting.choices)
    elif setting.kind is bool:
        values = [False, True]
    elif setting.kind == "path":
        values = ["data"]
    elif setting.kind is str:
        values = ["x" * max(setting.min_length, 1)]
    elif setting.menu and not setting.slider:
        values = [setting.kind(value) for value in setting.menu]
    else:
        values = _numbers_inside(setting)
    return values + ([None] if setting.optional else [])


def _numbers_inside(setting: Setting) -> list:
    sliding = setting.slider and not setting.log_slider
    low, high = setting.slider[:2] if sliding else (setting.low, setting.high)
    if setting.log_slider:
        low, high = 10.0 ** setting.slider[0], 10.0 ** setting.slider[1]
    low = 0 if low is None else low
    if setting.low_open or (setting.low is not None and low < setting.low):
        low = (setting.low or 0) + (1 if setting.kind is int else 0.5 * (high or 1) if high else 0.5)
    high = low + 10 if high is None else high
    numbers = [low, (low + high) / 2, high]
    if setting.kind is int:
        return sorted({int(round(number)) for number in numbers})
    return sorted({float(number) for number in numbers})


def an_invalid_choice(setting: Setting) -> str:
    """A name that is not one of `setting`'s choices (built from them, so it never collides)."""
    return "not-" + "-".join(sorted(setting.choices))


def invalid_values(setting: Setting) -> list:
    """Values `setting` refuses: another type, a name outside its choices, numbers outside its range."""
    values = [[1, 2], object()]
    if setting.choices:
        values.append(an_invalid_choice(setting))
    elif setting.kind in (int, float):
        values += ["many", float("nan")] + ([True] if setting.kind is int else [])
        if setting.low is not None:
            values.append(setting.low - 1)
        if setting.high is not None:
            values.append(setting.high + 1)
        if setting.kind is int:
            values.append(1.5)
    elif setting.kind is str and setting.max_length:
        values.append("x" * (setting.max_length + 1))
    if not setting.optional:
        values.append(None)
    return values
