------------------------- MODULE KafkaLeaderEpoch --------------------------
(***************************************************************************)
(* Variant `leader-epoch`: KIP-101, Kafka 0.11. Every replica keeps a      *)
(* leader-epoch cache, the start offset of every epoch in its log. A       *)
(* replica that becomes a follower does not truncate at once: it first     *)
(* asks the leader, with OffsetsForLeaderEpoch, where its latest epoch     *)
(* ends on the leader (FollowerTruncateByLeaderEpoch), truncates there (to *)
(* its HW when the answer is undefined, as Kafka 0.11 falls back), and     *)
(* only then fetches.                                                      *)
(*                                                                         *)
(* The counterpart of Kip101.tla in Kafka's own specifications, and of     *)
(* LeaderEpochTruncation in model/protocols.py.                            *)
(***************************************************************************)
EXTENDS Integers, Sequences, KafkaProtocols

CONSTANTS Replicas, MaxMessages, MaxCrashes, MaxElections, AcksAll, MinIsr, Unclean

VARIABLES replicas, controller, written, crashes, committed, acked

(* The LeaderAndIsr naming another leader: keep the log and wait for the   *)
(* leader's answer to OffsetsForLeaderEpoch ("truncating" is               *)
(* KafkaReplication's Truncating).                                         *)
AskBeforeFetching(rep) == [rep EXCEPT !.role = "truncating"]

INSTANCE KafkaReplication WITH
    BecomeFollowerReplica <- AskBeforeFetching,
    EpochsAfterAppend <- CacheAfterAppend,
    EpochsAfterTruncate <- CacheAfterTruncate,
    EpochsOnBecomeLeader <- CacheOnBecomeLeader,
    TruncationPoint <- Kip101TruncationPoint,
    MayJoinIsr <- JoinAtHw,
    FetchDivergence <- NoDivergence,
    TruncateOnFetch <- FALSE,
    RecordsDivergingFetch <- TRUE

Next == BaseNext

Spec == Init /\ [][Next]_vars

=============================================================================
