"""A lemma over the symbolic state's unread removals (`kafka-mc prove --lemmas tests/examples/lag_lemmas.py`,
docs/proofs.md): with it, `prove --metadata-lag` proves `lag_properties.unread_removals_left_the_isr`."""

import z3

from kafka_mc.model.state import NO_LEADER


def UnreadRemovalsLeftTheIsr(s):
    """A removal the leader has not read is out of the controller's ISR, and only a partition with a leader has
    one."""
    return z3.And([z3.Implies(unseen, z3.And(z3.Not(member), s.leader != NO_LEADER))
                   for unseen, member in zip(s.unseen, s.isr)])


LEMMAS = [UnreadRemovalsLeftTheIsr]
