"""E2B's ``Sandbox``, as far as the README's integration uses it: what it was asked to create
is recorded (E2B's service cannot be reached from the tests)."""

created: list[dict] = []


class Sandbox:
    def __init__(self, **opts):
        self.opts = opts

    @classmethod
    def create(cls, **opts) -> "Sandbox":
        created.append(opts)
        return cls(**opts)
