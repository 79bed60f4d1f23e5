"""Properties of the unread removals of a leader that reads the metadata late (`--metadata-lag`), written so
that a proof encodes them (shifts and `& 1` over the ISR's bits, not a bitwise and of two fields):
`kafka-mc prove --property tests/examples/lag_properties.py:NAME` (docs/proofs.md)."""


def unread_removals_left_the_isr(state):
    """A member the controller removed that its leader has not read is out of the controller's ISR, and only a
    partition with a leader has one."""
    controller = state.controller
    return all(not (controller.unseen >> index) & 1 or (not (controller.isr >> index) & 1 and controller.leader != -1)
               for index in range(len(state.replicas)))


def no_unread_removals(state):
    """False with the lag: the leader reads every removal at once."""
    return state.controller.unseen == 0
