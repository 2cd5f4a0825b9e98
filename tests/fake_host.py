"""A fake load monitor for the interleaved-rounds engine (perfstudy.measure.rounds): a machine
nobody else uses, so no window is measured again for interference."""

from perfstudy.measure.interference import Load


def quiet_monitor():
    """A machine nobody else uses: all busy time is ours."""
    state = {"t": 0.0}

    def read():
        state["t"] += 1.0
        return Load(state["t"], 2 * state["t"], state["t"], 0.0, state["t"], None)
    return read
