"""The README's host integration, run as written: its block is taken from README.md and run
with ``e2b`` resolving to the recorder in ``tests/stubs``; the session it opens pays, and the
sandbox it asked E2B for got the session's token and the provider tags."""

import pathlib
import sys

from bursar_sdk import SandboxClient

from conftest import env

HERE = pathlib.Path(__file__).parent


def test_the_readme_integration_runs_as_written(devnet):
    env("BURSAR_RELAYER_URL")
    readme = (HERE.parent / "README.md").read_text()
    block = readme.split("<!-- host-integration")[1].split("```python")[1].split("```")[0]
    sys.path.insert(0, str(HERE / "stubs"))
    import e2b

    scope: dict = {}
    exec(compile(block, "README.md", "exec"), scope)
    payee = env("X402_PAY_TO")
    owner = devnet.funded_owner(20_000_000)
    session, _ = scope["start_agent"](owner, devnet.usdc, devnet.allowlist([payee], "readme"))
    assert session.status.value == "open"
    asked = e2b.created[-1]
    assert asked["envs"]["BURSAR_CAPABILITY_TOKEN"] == session.capability_token
    assert asked["metadata"]["bursar_session"] == session.session_id
    sandbox = SandboxClient(asked["envs"]["BURSAR_RELAYER_URL"], asked["envs"]["BURSAR_CAPABILITY_TOKEN"])
    before = devnet.balance(payee)
    assert sandbox.pay(payee, "0.25 USDC", "readme").status.value == "confirmed"
    assert devnet.balance(payee) - before == 250_000
