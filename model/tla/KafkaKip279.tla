--------------------------- MODULE KafkaKip279 -----------------------------
(***************************************************************************)
(* Variant `kip-279`: KIP-279 (KAFKA-6361), Kafka 2.0. The leader answers  *)
(* OffsetsForLeaderEpoch with the largest epoch it has at or below the     *)
(* follower's and where that epoch ends; the follower truncates to the end *)
(* of the same epoch in its own log, and asks again, with its new latest   *)
(* epoch, while the two epochs differ.                                     *)
(*                                                                         *)
(* The counterpart of Kip279.tla in Kafka's own specifications (which      *)
(* finds the truncation point by comparing logs from the tail), and of     *)
(* Kip279Truncation in model/protocols.py.                                 *)
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
    TruncationPoint <- Kip279TruncationPoint,
    MayJoinIsr <- JoinAtHw,
    FetchDivergence <- NoDivergence,
    TruncateOnFetch <- FALSE,
    RecordsDivergingFetch <- TRUE

Next == BaseNext

Spec == Init /\ [][Next]_vars

=============================================================================
