"""Why the grader cannot isolate or bound something, kept in English and translated where it is shown.

`sandbox.probe` and `cgroups.find` find their reasons once per process, before anyone may have
chosen a language; a `Reason` keeps its message (marked with `N_`) and fields, and `shown()`
translates them when asked.
"""

from d2lmini.i18n import _


class Reason(str):
    """Why something cannot be done here: the English text, translated where it is shown."""

    template: str
    fields: dict

    def __new__(cls, template: str, **fields):
        made = super().__new__(cls, template.format(**fields))
        made.template, made.fields = template, fields
        return made

    def shown(self) -> str:
        """The reason in the language d2lmini speaks now."""
        return _(self.template).format(**{key: shown(value) for key, value in self.fields.items()})


def shown(text) -> str:
    """`text` as a person reads it now: a `Reason` translated, anything else as it is."""
    return text.shown() if isinstance(text, Reason) else text
