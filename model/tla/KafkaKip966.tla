---------------------------- MODULE KafkaKip966 -----------------------------
(***************************************************************************)
(* Variant `kip-966` (Kafka 4.1): eligible leader replicas: below          *)
(* min.insync.replicas the ISR's leavers stay electable (KIP-966; Kafka    *)
(* 4.1 for new clusters).                                                  *)
(*                                                                         *)
(* KIP-966, read on the 3.9 branch and trunk of October 2024 (the code 4.0 *)
(* ships off and 4.1 turns on for new clusters):                           *)
(* `PartitionChangeBuilder.maybePopulateTargetElr`, `isValidNewLeader`,    *)
(* `tryElection`, `maybeUpdateRecordElr` and `build`;                      *)
(* `ReplicationControlManager.generateLeaderAndIsrUpdates` (a fenced       *)
(* broker leaves the ISR, the last one too) and                            *)
(* `handleBrokerUncleanShutdown`, called by                                *)
(* `ClusterControlManager.registerBroker` for every new incarnation. Every *)
(* crash of the model is an unclean shutdown (controlled shutdown is not   *)
(* modelled). The last known leader (KAFKA-15584, 3.7.0:                   *)
(* `maybeUpdateLastKnownLeader`, `canElectLastKnownLeader`, on wherever    *)
(* the ELR is): an ISR that becomes empty keeps its leader, elected        *)
(* uncleanly while the ISR and the ELR are both empty, before any other    *)
(* unclean election (here once it is up). KRaft only, so with KIP-903      *)
(* (3.5): the controller refuses an AlterPartition naming a broker         *)
(* registered again since the fetch the leader saw                         *)
(* (`ReplicationControlManager.ineligibleReplicasForIsr`); and the         *)
(* controller keeps the leader epoch when the ISR shrinks (KAFKA-15021,    *)
(* metadata version 3.6), and the leader fences a fetch from a follower's  *)
(* earlier incarnation (KAFKA-15221, 3.7.0:                                *)
(* `Replica.updateFetchStateOrThrow`). The rest as `kafka-15583`.          *)
(*                                                                         *)
(* epoch_cache = True; epoch_on_election = True; new_follower = 'fetch-if- *)
(* epoch'; epoch_lookup = 'kip-279'; isr_join = 'leader-epoch-start';      *)
(* truncate_on_fetch = True; diverging_fetch_updates_leader = False;       *)
(* epoch_assign = 'truncate-conflicting'; truncate_at_end = True;          *)
(* diverging_response_hw = False; bounce_noticed = True; hw_needs_min_isr  *)
(* = True; eligible_leaders = True; isr_updates = 'broker-epochs';         *)
(* isr_shrink = 'behind-leo'; follower_skips = 'same-epoch';               *)
(* isr_removal_bump = 'none'; stale_fetch = 'fenced'.                      *)
(*                                                                         *)
(* Generated from model/protocols.py by checker/tla_modules.py: do not     *)
(* edit.                                                                   *)
(***************************************************************************)
EXTENDS Integers, Sequences, KafkaProtocols

CONSTANTS Replicas, MaxMessages, MaxCrashes, MaxElections, AcksAll, MinIsr, Unclean, EpochBump,
          SkipsSameLeader, MaxDiskFailures, MaxDelays, MetadataLag

VARIABLES replicas, controller, written, crashes, committed, acked, delays, diskFailures

INSTANCE KafkaReplication WITH
    BecomeFollowerReplica <- FetchAtOnce,
    EpochCache            <- TRUE,
    AssignEpoch           <- TruncateConflicting,
    AssignOnElection      <- TruncateConflicting,
    EpochsAfterTruncate   <- CacheAfterTruncate,
    TruncationPoint       <- Kip279TruncationPoint,
    MayJoinIsr            <- JoinPastEpochStart,
    FetchDivergence       <- FetchDivergenceOffset,
    TruncateOnFetch       <- TRUE,
    RecordsDivergingFetch <- FALSE,
    EpochOnElection       <- TRUE,
    TruncateAtEnd         <- TRUE,
    DivergingResponseHw   <- FALSE,
    BounceNoticed         <- TRUE,
    HwNeedsMinIsr         <- TRUE,
    EligibleLeaders       <- TRUE,
    DropsCaughtUp         <- FALSE,
    SkipsLeaderAndIsr     <- SkipsOwnEpochOnly,
    RemembersLeader       <- FALSE,
    LiveMembersOnly       <- TRUE,
    ChecksBrokerEpochs    <- TRUE,
    FencesStaleFetches    <- TRUE

Next == BaseNext

Spec == Init /\ [][Next]_vars

=============================================================================
