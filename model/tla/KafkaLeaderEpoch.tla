-------------------------- MODULE KafkaLeaderEpoch --------------------------
(***************************************************************************)
(* Variant `leader-epoch`: KIP-101, Kafka 0.11. Every replica keeps a      *)
(* leader-epoch cache, the start offset of every epoch in its log. A       *)
(* replica that becomes a follower does not truncate at once: it first     *)
(* asks the leader, with OffsetsForLeaderEpoch, where its latest epoch     *)
(* ends on the leader (FollowerTruncateByLeaderEpoch), truncates there,    *)
(* and only then fetches.                                                  *)
(*                                                                         *)
(* The counterpart of Kip101.tla in Kafka's own specifications, and of     *)
(* LeaderEpochTruncation in model/protocols.py.                            *)
(***************************************************************************)
EXTENDS Integers, Sequences

CONSTANTS Replicas, MaxMessages, MaxCrashes, MaxElections, AcksAll, MinIsr, Unclean

VARIABLES replicas, controller, written, crashes, committed, acked

(* The LeaderAndIsr naming another leader: keep the log and wait for the   *)
(* leader's answer to OffsetsForLeaderEpoch ("truncating" is               *)
(* KafkaReplication's Truncating).                                         *)
LeBecomeFollower(rep) == [rep EXCEPT !.role = "truncating"]

(* Appending records at an offset opens a cache entry <<epoch, offset>> at *)
(* every record whose epoch is newer than the latest cached one.           *)
RECURSIVE LeEpochsAfterAppend(_, _, _)
LeEpochsAfterAppend(epochs, records, offset) ==
    IF records = <<>> THEN epochs
    ELSE LET epoch == Head(records).epoch
             opened == IF epochs = <<>> \/ epoch > epochs[Len(epochs)][1]
                       THEN Append(epochs, <<epoch, offset>>)
                       ELSE epochs
         IN  LeEpochsAfterAppend(opened, Tail(records), offset + 1)

(* Cutting the log at an offset drops the epochs that start at or after it.*)
LeEpochsAfterTruncate(epochs, offset) == SelectSeq(epochs, LAMBDA entry : entry[2] < offset)

(* A new leader opens its epoch at its LEO.                                *)
LeEpochsOnBecomeLeader(epochs, epoch, leo) == Append(epochs, <<epoch, leo>>)

INSTANCE KafkaReplication WITH
    BecomeFollowerReplica <- LeBecomeFollower,
    EpochsAfterAppend <- LeEpochsAfterAppend,
    EpochsAfterTruncate <- LeEpochsAfterTruncate,
    EpochsOnBecomeLeader <- LeEpochsOnBecomeLeader

(* The leader's answer to OffsetsForLeaderEpoch, as                        *)
(* LeaderEpochFileCache.endOffsetFor: its LEO for its latest epoch;        *)
(* otherwise the start offset of the first later epoch in its cache;       *)
(* Unknown (UNDEFINED_EPOCH_OFFSET) for an undefined epoch or one older    *)
(* than every cached epoch.                                                *)
EndOffsetFor(leader, requestedEpoch) ==
    LET epochs == leader.epochs
        later == {i \in 1 .. Len(epochs) : epochs[i][1] > requestedEpoch}
    IN  IF requestedEpoch = Unknown \/ epochs = <<>> THEN Unknown
        ELSE IF requestedEpoch = epochs[Len(epochs)][1] THEN Leo(leader)
        ELSE IF requestedEpoch < epochs[1][1] THEN Unknown
        ELSE IF later = {} THEN Unknown
        ELSE epochs[MinOf(later)][2]

(* OffsetsForLeaderEpoch, request and response in one event: follower r    *)
(* sends its latest cached epoch, truncates to the leader's answer if its  *)
(* LEO is larger (to its HW when the answer is undefined, as Kafka 0.11    *)
(* falls back), then starts fetching.                                      *)
FollowerTruncateByLeaderEpoch(r) ==
    LET f == replicas[r]
        l == controller.leader
        latest == IF f.epochs = <<>> THEN Unknown ELSE f.epochs[Len(f.epochs)][1]
        endOffset == EndOffsetFor(replicas[l], latest)
        target == IF endOffset = Unknown THEN f.hw ELSE endOffset
    IN  /\ Alive(f)
        /\ f.role = Truncating
        /\ f.epoch = controller.epoch
        /\ l # NoLeader
        /\ Alive(replicas[l])
        /\ replicas[l].role = Leader
        /\ replicas' = [replicas EXCEPT ![r] = [Truncate(f, target) EXCEPT !.role = Follower]]
        /\ UNCHANGED <<controller, written, crashes, committed, acked>>

Next == BaseNext \/ \E r \in Replicas : FollowerTruncateByLeaderEpoch(r)

Spec == Init /\ [][Next]_vars

=============================================================================
