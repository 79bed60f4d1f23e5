----------------------------- MODULE KafkaHw -------------------------------
(***************************************************************************)
(* Variant `hw`: Kafka before 0.11. A replica that becomes a follower      *)
(* truncates its log to its own high watermark, the checkpoint, and then   *)
(* fetches. There is no leader-epoch cache: it stays empty.                *)
(*                                                                         *)
(* The counterpart of KafkaTruncateToHighWatermark.tla in Kafka's own      *)
(* specifications, and of HighWatermarkTruncation in model/protocols.py.   *)
(***************************************************************************)
EXTENDS Integers, Sequences, KafkaProtocols

CONSTANTS Replicas, MaxMessages, MaxCrashes, MaxElections, AcksAll, MinIsr, Unclean

VARIABLES replicas, controller, written, crashes, committed, acked

(* The LeaderAndIsr naming another leader: cut the log at the local HW and *)
(* become a follower ("follower" is KafkaReplication's Follower). With no  *)
(* epoch cache, cutting the log is all the base's Truncate would do: the   *)
(* HW is already at most the cut.                                          *)
HwBecomeFollower(rep) ==
    [rep EXCEPT !.log = IF rep.hw < Len(@) THEN SubSeq(@, 1, rep.hw) ELSE @,
                !.role = "follower"]

INSTANCE KafkaReplication WITH
    BecomeFollowerReplica <- HwBecomeFollower,
    EpochsAfterAppend <- NoCacheAfterAppend,
    EpochsAfterTruncate <- NoCacheAfterTruncate,
    EpochsOnBecomeLeader <- NoCacheOnBecomeLeader,
    TruncationPoint <- NoTruncationPoint,
    MayJoinIsr <- JoinAtHw,
    FetchDivergence <- NoDivergence,
    TruncateOnFetch <- FALSE,
    RecordsDivergingFetch <- TRUE

Next == BaseNext

Spec == Init /\ [][Next]_vars

=============================================================================
