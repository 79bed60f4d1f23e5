"""Users' own properties for the TLA+ twin's tests (tests/test_tla_properties.py): each reads a
different part of the state, so that every field the twin maps is stated and checked by TLC."""

from kafka_mc.model.state import NO_LEADER


def leader_holds_every_acked_write(state):
    """Every acknowledged message is in the leader's log (the acked bitmask, the leader's index)."""
    if state.controller.leader == NO_LEADER or not state.leader.alive:
        return True
    held = 0
    for record in state.leader.log:
        held |= 1 << record.msg
    return state.acked & ~held == 0


def every_isr_member_is_up_to_the_hw(state):
    """ISR members hold at least the leader's HW (the isr bitmask, shifts, status, role)."""
    leader = state.leader
    if leader is None or leader.role != 1:
        return True
    for index, replica in enumerate(state.replicas):
        if state.controller.isr >> index & 1 and replica.status == 0 and replica.leo < leader.hw:
            return False
    return True


def responses_and_views_are_in_range(state):
    """A response in flight and the leader's view of LEOs never point past the leader's log."""
    for replica in state.replicas:
        response = replica.response
        if response:
            if not response.out_of_range:
                assert response.offset + len(response.records) <= state.written
            for record in response.records:
                assert 1 <= record.msg <= state.written
        for leo in replica.remote_leos:
            assert leo <= state.written
    return True


def two_replicas_hold_a_record(state):
    """A witness: two replicas each hold a record."""
    return sum(1 for replica in state.replicas if replica.leo >= 1) >= 2


def committed_records_stay_committed(before, action, after):
    """A step property: the committed history only grows."""
    for offset, msg in before.committed:
        if (offset, msg) not in after.committed:
            return False
    return after.written >= before.written


def hw_never_moves_back_on_a_live_leader(before, action, after):
    """A step property that fails: a replica's HW goes back only when it restarts or truncates."""
    for old, new in zip(before.replicas, after.replicas):
        if new.hw < old.hw:
            return False
    return True


def replica_b_never_leads(state):
    """Fails where B (replica 1) leads: the replicas' order is kafka-mc's."""
    return state.controller.leader != 1


def elr_is_always_empty(state):
    """Fails under KIP-966 (`kip-966`): the ELR (a bitmask, as the ISR) takes a replica the ISR drops
    below min.insync.replicas. Without eligible leaders it reads 0 and holds."""
    return state.controller.elr == 0


def elr_and_isr_are_disjoint(state):
    """No replica is in both the ISR and the ELR (KIP-966 keeps them apart)."""
    return state.controller.elr & state.controller.isr == 0


def live_elr_members_hold_every_committed_record(state):
    """Every live ELR member holds every committed record, at its offset."""
    for index, replica in enumerate(state.replicas):
        if state.controller.elr >> index & 1 and replica.alive:
            for offset, msg in state.committed:
                if offset >= replica.leo or replica.log[offset].msg != msg:
                    return False
    return True


def only_the_elr_is_left(state):
    """A witness: the ISR is empty and a replica is eligible through the ELR."""
    return state.controller.isr == 0 and state.controller.elr != 0


def last_known_leader_only_while_leaderless(state):
    """The last known leader (KAFKA-15584) is kept only while the partition has no leader: every
    election clears it. Without eligible leaders it reads 0 and holds."""
    return state.controller.last_known_elr == 0 or state.controller.leader == -1


def only_the_last_known_leader_is_left(state):
    """A witness: the ISR and the ELR are empty, and the last known leader is all the controller may elect."""
    controller = state.controller
    return controller.isr == 0 and controller.elr == 0 and controller.last_known_elr != 0


def unread_removals_are_out_of_the_isr(state):
    """A member the controller removed that its leader has not read (`--metadata-lag`) is out of the controller's
    ISR, and only a partition with a leader has one. Without the lag it reads 0 and holds."""
    controller = state.controller
    return (controller.unseen & controller.isr) == 0 and (controller.unseen == 0 or controller.leader != -1)


def every_removal_is_read_at_once(state):
    """False with the lag: the leader works with a member the controller has removed. Without it, it holds."""
    return state.controller.unseen == 0


def a_removed_member_still_counts(state):
    """A witness: the leader still counts in its ISR a member the controller has removed (`--metadata-lag`)."""
    return state.controller.unseen != 0 and state.controller.leader != -1


def no_proposal_in_flight(state):
    """False with delays (`--delays`): the leader's AlterPartition that adds a replica waits at the controller."""
    return state.controller.proposal == 0


def no_reregistration_since_a_proposal(state):
    """False with delays: the replica that proposal adds registered again (a new broker epoch) meanwhile."""
    return state.controller.reregistered == 0


def no_request_delayed_yet(state):
    """False with delays: a request (an AlterPartition or a fetch) has been delayed."""
    return state.delays == 0


def no_fetch_delayed(state):
    """False with delays: a follower's fetch waits to reach the leader."""
    return all(replica.delayed_fetch == 0 for replica in state.replicas)


def no_stale_fetch_delayed(state):
    """False with delays: a fetch that waits was sent before its replica restarted."""
    return not any(replica.delayed_fetch_stale for replica in state.replicas)


def a_stale_fetch_waits_at_the_leader(state):
    """A witness: a fetch sent before its replica restarted still waits to reach the leader."""
    return any(replica.delayed_fetch != 0 and replica.delayed_fetch_stale for replica in state.replicas)


def no_disk_lost(state):
    """False with `--disk-failures`: a crash lost a replica's disk."""
    return state.disk_failures == 0


def proposals_add_replicas_outside_the_isr(state):
    """An AlterPartition in flight adds a replica that is not in the controller's ISR yet."""
    return (state.controller.proposal & state.controller.isr) == 0


def lost_disks_are_crashes(state):
    """Every lost disk was a crash's."""
    return state.disk_failures <= state.crashes


def every_replica_follows_the_current_leader(state):
    """False in a release that remembers the leader a replica follows (before 2.1): a replica still names a
    leader the controller has replaced."""
    return all(replica.leader_id == -1 or replica.leader_id == state.controller.leader for replica in state.replicas)


def no_replica_remembers_a_leader(state):
    """False before 2.1 (to 2.0.1); from 2.1 (KIP-320) no release reads a replica's `leader_id`, which stays
    -1 (none)."""
    return all(replica.leader_id == -1 for replica in state.replicas)


def no_epoch_bumped(state):
    """False with the controller's epoch bumps: an epoch the controller bumped without an election."""
    return state.controller.bumped == 0


def bumped_epochs_are_past_or_current(state):
    """Every epoch the controller bumped is at most its current epoch."""
    return state.controller.bumped >> (state.controller.epoch + 1) == 0


def a_replica_follows_another(state):
    """A witness, before 2.1: a replica follows a leader other than itself."""
    return any(replica.leader_id != -1 and replica.leader_id != index for index, replica in enumerate(state.replicas))


def replicas_follow_replicas(state):
    """A replica follows none (-1) or one of the partition's replicas."""
    return all(-1 <= replica.leader_id < len(state.replicas) for replica in state.replicas)
