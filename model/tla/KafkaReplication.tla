-------------------------- MODULE KafkaReplication --------------------------
(***************************************************************************)
(* One partition's replication, the TLA+ twin of model/replication.py.     *)
(*                                                                         *)
(* The state carries exactly the information of the Python State, value    *)
(* for value, so that TLC and kafka-mc count the same distinct states:     *)
(*                                                                         *)
(*   replicas   a function from Replicas to a record per replica:          *)
(*              durable  log     sequence of [msg, epoch] records          *)
(*                       hw      the replication-offset-checkpoint         *)
(*                       epochs  leader-epoch-checkpoint, a sequence of    *)
(*                               <<epoch, start offset>>                   *)
(*                       status  Up, Crashed or Offline (Crashed: dead,    *)
(*                               not yet noticed by the controller)        *)
(*              memory   role    NoRole, Leader, Truncating or Follower    *)
(*                       epoch   the leader epoch of the last              *)
(*                               LeaderAndIsr it acted on (Unknown = -1)   *)
(*                       response    NoResponse, or the FetchResponse in   *)
(*                               flight to it: [offset, hw, records,       *)
(*                               outOfRange]                               *)
(*                       remoteLeos  NoRemoteLeos, or, on the leader       *)
(*                               only, its view of every replica's LEO     *)
(*                               (Unknown = -1 until that replica fetches) *)
(*                       leaderId    the leader named by the last          *)
(*                               LeaderAndIsr it acted on, itself as       *)
(*                               leader (Partition.leaderReplicaIdOpt);    *)
(*                               NoLeader after a crash, and always        *)
(*                               without RemembersLeader                   *)
(*              at the leader  delayedFetch  the offset + 1 of its fetch   *)
(*                               in flight to the leader, delivered late   *)
(*                               (0: none); delayedFetchStale: sent        *)
(*                               before it crashed, by an earlier          *)
(*                               incarnation (with an older broker epoch)  *)
(*   controller [leader, epoch, isr]: the partition state in ZooKeeper;    *)
(*              leader is NoLeader when the partition is leaderless; with  *)
(*              EpochBump also bumped, the epochs the controller's bumps   *)
(*              made (model/epoch_bumps.py; the field is absent otherwise, *)
(*              so the states of the replication model, and the traces     *)
(*              other tools write of them, are those without the bump);    *)
(*              with EligibleLeaders also elr, the eligible leader         *)
(*              replicas (KIP-966; absent otherwise, as bumped), and       *)
(*              lastKnownElr, the last known leader (KAFKA-15584); proposal*)
(*              is the replica the leader's AlterPartition in flight adds  *)
(*              to the ISR (a set, empty for none), reregistered those of  *)
(*              it registered again since (a new broker epoch); unseen the *)
(*              members the controller removed that its leader has not    *)
(*              yet read (MetadataLag; always empty otherwise)             *)
(*   written    producer records written so far (record ids 1, 2, ...)     *)
(*   crashes    crashes so far                                             *)
(*   committed  history: every <<offset, msg>> once below the leader's HW  *)
(*   acked      the messages acknowledged to the producer                   *)
(*   delays     requests delayed so far (AlterPartition and fetch)        *)
(*   diskFailures  crashes so far that lost the disk, counted only where  *)
(*              MaxDiskFailures < MaxCrashes (else the crash bound implies *)
(*              it, and it stays 0: Config.counts_disk_failures)           *)
(*                                                                         *)
(* Offsets are Kafka's, from 0: the record at offset o of a log is         *)
(* log[o + 1], a replica's LEO is Len(log).                                *)
(*                                                                         *)
(* What is simplified, and why, is the docstring of model/replication.py:  *)
(* a FetchRequest is sent and handled in one event, the ISR lives only in  *)
(* the controller's partition state, every HW change and every append is   *)
(* durable at once, time is abstract, the controller never fails and       *)
(* elects only after noticing the leader's crash, and a crashed leader     *)
(* restarts only once that crash has been noticed.                         *)
(*                                                                         *)
(* With EpochBump, the twin of model/epoch_bumps.py: when the controller   *)
(* removes a dead follower from the ISR it writes a new leader epoch with  *)
(* the same leader (0.11.0.0 KafkaController.removeReplicaFromIsr, 2.1.0   *)
(* ReplicaStateMachine.doRemoveReplicasFromIsr ->                          *)
(* LeaderAndIsr.newLeaderAndIsr, epoch + 1), which the leader takes at     *)
(* once (Partition.makeLeader as a leader already); a follower acts on it  *)
(* as on any LeaderAndIsr (BecomeFollower: up to 2.0.1 it skips one naming *)
(* the leader it follows). With SkipsSameLeader (to 2.0.1) its requests,   *)
(* which carry no epoch, reach the leader from any epoch of its            *)
(* leadership; from 2.1 the leader fences an older epoch (KIP-320).        *)
(* The elections bound counts elections, not epochs (Elections). The twin  *)
(* has no network failures, and so no leader that takes a bump late, when  *)
(* it reconnects to ZooKeeper (EpochBumpModel.zk_reconnect).               *)
(*                                                                         *)
(* Truncation is pluggable, as in model/protocols.py: a variant module     *)
(* (KafkaHw, KafkaLeaderEpoch, KafkaKip279, KafkaKip320,                   *)
(* KafkaDivergingEpoch, KafkaKafka13141, KafkaKafka14704,                  *)
(* KafkaKafka15583, KafkaKip966) instantiates this module with its own     *)
(* operators for the CONSTANT operators below, most of them taken from     *)
(* KafkaProtocols; everything else is shared.                              *)
(*                                                                         *)
(* With HwNeedsMinIsr (KAFKA-15583) the leader's HW stays put while its    *)
(* ISR has fewer than MinIsr members. With EligibleLeaders (KIP-966) the   *)
(* controller keeps the ELR on every ISR change (IsrChange), the ISR may   *)
(* become empty when the controller notices its last member's failure, a  *)
(* live ELR member is electable while the ISR is empty, an unclean         *)
(* election clears the ELR, and a restarting replica in the ISR or ELR     *)
(* leaves both (an unclean shutdown).                                      *)
(*                                                                         *)
(* With MaxDelays > 0 (model/replication.py, Config.delays): the leader's  *)
(* AlterPartition adding a follower may stay in flight until the           *)
(* controller handles it (LeaderSendAlterPartition,                        *)
(* ControllerHandleAlterPartition), the leader counting its HW and         *)
(* acknowledgements over the ISR with it meanwhile; any ISR change or the  *)
(* leader's loss drops it; the controller refuses a broker that is not     *)
(* live (LiveMembersOnly, KIP-841) or registered again since               *)
(* (ChecksBrokerEpochs, KIP-903). A follower's fetch may stay in flight    *)
(* (FollowerSendDelayedFetch); a crash leaves it at the leader, stale, and *)
(* the leader handles it later (LeaderHandleStaleFetch), refusing one of a *)
(* live follower's earlier incarnation with FencesStaleFetches             *)
(* (KAFKA-15221). A new leader epoch fences every delayed fetch.           *)
(*                                                                         *)
(* With MetadataLag (KRaft variants, Config.metadata_lag): the ISR members *)
(* the controller removes on its own (a failure noticed, an unclean        *)
(* registration) reach the leader when it reads them in the metadata log   *)
(* (LeaderApplyMetadata; Partition.makeLeader at a newer partition epoch). *)
(* Until then it works with the ISR it knew (LeaderIsr), and every ISR     *)
(* change it proposes is refused (INVALID_UPDATE_VERSION) and stays        *)
(* pending: an expansion in proposal, a shrink as a proposal of the leader *)
(* itself (ReplicationModel._controller_removes).                          *)
(***************************************************************************)
EXTENDS Integers, Sequences, FiniteSets, KafkaProtocols

CONSTANTS
    Replicas,       \* the brokers holding a replica of the partition, e.g. {A, B, C}
    MaxMessages,    \* how many producer records a behaviour may write
    MaxCrashes,     \* how many replica crashes a behaviour may contain
    MaxElections,   \* how many leader elections (the initial leader is not one)
    AcksAll,        \* TRUE for acks=all, FALSE for acks=1
    MinIsr,         \* min.insync.replicas, enforced with acks=all only
    Unclean,        \* unclean.leader.election.enable
    EpochBump,      \* TRUE: the controller bumps the epoch on ISR removal
    SkipsSameLeader,\* TRUE: with EpochBump, requests carry no epoch (to 2.0.1)
    MaxDiskFailures,\* how many of the crashes may lose the broker's disk
    MaxDelays,      \* how many requests (AlterPartition, fetch) may be delayed
    MetadataLag     \* TRUE: the leader reads the controller's own ISR changes late

(***************************************************************************)
(* The truncation protocol: what the variants define.                      *)
(***************************************************************************)
CONSTANTS
    \* The replica, its epoch already set, after it accepts a LeaderAndIsr
    \* naming another leader: what it does to its log and which role it takes.
    BecomeFollowerReplica(_),
    \* Whether replicas keep a leader-epoch cache.
    EpochCache,
    \* The epoch cache after an epoch is assigned at a start offset (an
    \* appended record), and after a new leader's epoch is, at its LEO.
    AssignEpoch(_, _, _),
    AssignOnElection(_, _, _),
    \* The epoch cache after the log is cut at an offset.
    EpochsAfterTruncate(_, _),
    \* OffsetsForLeaderEpoch with a leader: <<offset to truncate to, whether
    \* truncation is complete>> for a follower in the Truncating role, given
    \* EpochOnElection.
    TruncationPoint(_, _, _),
    \* Whether a follower outside the ISR fetching at an offset joins it.
    MayJoinIsr(_, _),
    \* The offset a fetching follower truncates to when the leader finds its
    \* log diverging (Unknown: no divergence), given EpochOnElection.
    FetchDivergence(_, _, _),
    \* A diverging fetch's response sets the follower's HW before it truncates.
    TruncateOnFetch,
    \* The leader takes a diverging fetch's offset as the follower's LEO.
    RecordsDivergingFetch,
    \* KAFKA-7415: a new leader caches its epoch at election, and endOffsetFor
    \* answers an epoch older than the cache with the first entry's start.
    EpochOnElection,
    \* KAFKA-10706: a truncation at or past the LEO still drops the cache
    \* entries starting at the LEO.
    TruncateAtEnd,
    \* The follower takes the HW of a diverging response before it truncates
    \* (until KAFKA-14704).
    DivergingResponseHw,
    \* KIP-380: the controller sees every bounce, so a crashed replica starts
    \* again only once the controller has noticed the crash.
    BounceNoticed,
    \* KAFKA-15583: the leader's HW does not rise while its ISR has fewer
    \* than MinIsr members (Partition.maybeIncrementLeaderHW, isUnderMinIsr).
    HwNeedsMinIsr,
    \* KIP-966: eligible leader replicas (controller.elr).
    EligibleLeaders,
    \* Before KAFKA-7152 (2.1.0) the leader drops a follower at its LEO that
    \* stopped fetching too (Partition.getOutOfSyncReplicas).
    DropsCaughtUp,
    \* Whether a replica, acting on a LeaderAndIsr naming a leader in a newer
    \* epoch, only takes the epoch: Partition.makeFollower returns false
    \* (follower_skips, Protocol.skips_leader_and_isr).
    SkipsLeaderAndIsr(_, _, _),
    \* Replicas remember the leader they follow (leaderId; up to 2.0.1). Later
    \* variants never read it and keep it NoLeader (Protocol.remembers_leader).
    RemembersLeader,
    \* KIP-841 (3.3): the controller refuses an AlterPartition naming a broker
    \* that is not live, and the leader proposes only a live follower.
    LiveMembersOnly,
    \* KIP-903 (3.5, KRaft): the controller refuses one naming a broker
    \* registered again since the fetch the leader saw; the leader's own check
    \* refuses a fetch's broker epoch older than its metadata cache's.
    ChecksBrokerEpochs,
    \* KAFKA-15221 (3.7, KRaft): the leader refuses a fetch of a live
    \* follower's earlier incarnation.
    FencesStaleFetches

ASSUME
    /\ Replicas # {}
    /\ MaxMessages \in Nat /\ MaxCrashes \in Nat /\ MaxElections \in Nat
    /\ AcksAll \in BOOLEAN /\ Unclean \in BOOLEAN
    /\ EpochBump \in BOOLEAN /\ SkipsSameLeader \in BOOLEAN
    /\ MaxDiskFailures \in 0 .. MaxCrashes
    /\ SkipsSameLeader => EpochBump /\ RemembersLeader
    /\ HwNeedsMinIsr \in BOOLEAN /\ EligibleLeaders \in BOOLEAN /\ DropsCaughtUp \in BOOLEAN
    /\ RemembersLeader \in BOOLEAN
    /\ MaxDelays \in Nat /\ LiveMembersOnly \in BOOLEAN /\ ChecksBrokerEpochs \in BOOLEAN
    /\ FencesStaleFetches \in BOOLEAN /\ (FencesStaleFetches => ChecksBrokerEpochs)
    /\ EligibleLeaders => HwNeedsMinIsr /\ BounceNoticed
    /\ MinIsr \in 1 .. Cardinality(Replicas)
    /\ MetadataLag \in BOOLEAN /\ (MetadataLag => ChecksBrokerEpochs /\ ~EpochBump)

VARIABLES replicas, controller, written, crashes, committed, acked, delays, diskFailures

vars == <<replicas, controller, written, crashes, committed, acked, delays, diskFailures>>
history == <<committed, acked>>

NoLeader == "none"      \* controller.leader of a leaderless partition

(* The leaderId of a replica acting on a LeaderAndIsr naming leader l      *)
(* (ReplicationModel._remembered).                                         *)
Remembered(l) == IF RemembersLeader THEN l ELSE NoLeader

(* The epoch cache after the records (a sequence) are appended at an       *)
(* offset: each record's epoch assigned at its offset (Log.append).        *)
RECURSIVE EpochsAfterAppend(_, _, _)
EpochsAfterAppend(epochs, records, offset) ==
    IF ~EpochCache \/ records = <<>> THEN epochs
    ELSE EpochsAfterAppend(AssignEpoch(epochs, Head(records).epoch, offset), Tail(records), offset + 1)

(* The epoch cache of a replica that becomes leader in an epoch at its     *)
(* LEO: KAFKA-7415's Partition.makeLeader assigns it there.                *)
EpochsOnBecomeLeader(epochs, epoch, leo) ==
    IF EpochOnElection THEN AssignOnElection(epochs, epoch, leo) ELSE epochs

Up == "up"
Crashed == "crashed"
Offline == "offline"

NoRole == "none"
Leader == "leader"
Truncating == "truncating"
Follower == "follower"

NoResponse == <<>>
NoRemoteLeos == <<>>

----------------------------------------------------------------------------
(***************************************************************************)
(* Helpers                                                                 *)
(***************************************************************************)
Leo(rep) == Len(rep.log)
Alive(rep) == rep.status = Up

\* log[:n] and log[n:] of Python: the records below offset n, and from it on.
Prefix(log, n) == SubSeq(log, 1, Lesser(n, Len(log)))
Suffix(log, n) == SubSeq(log, n + 1, Len(log))

(* Cut the log at an offset; the HW and the epoch cache never point past   *)
(* the new end. An offset at or beyond the LEO cuts nothing, but the cache *)
(* entries starting at the LEO go after a log load (atEnd) or under        *)
(* KAFKA-10706 (TruncateAtEnd).                                            *)
TruncateLog(rep, offset, atEnd) ==
    IF offset >= Leo(rep)
    THEN IF atEnd THEN [rep EXCEPT !.epochs = EpochsAfterTruncate(@, Leo(rep))] ELSE rep
    ELSE [rep EXCEPT !.log = Prefix(@, offset),
                     !.hw = Lesser(@, offset),
                     !.epochs = EpochsAfterTruncate(@, offset)]

Truncate(rep, offset) == TruncateLog(rep, offset, TruncateAtEnd)

(* The controller's leader if it is live and acts as leader, else NoLeader.*)
LeaderOf(rs, ctl) ==
    IF /\ ctl.leader # NoLeader
       /\ Alive(rs[ctl.leader])
       /\ rs[ctl.leader].role = Leader
    THEN ctl.leader
    ELSE NoLeader

CurrentLeader == LeaderOf(replicas, controller)

(* The epochs the controller's epoch bumps made (model/state.py            *)
(* Controller.bumped): none without EpochBump, whose controller has no     *)
(* such field.                                                             *)
Bumped(ctl) == IF EpochBump THEN ctl.bumped ELSE {}

(* The first epoch of the leadership whose epoch is the given one: every   *)
(* epoch starts one (an election) but those the bumps made                 *)
(* (ReplicationModel._leadership_start). The records a leader holds in its *)
(* purgatory carry these epochs.                                           *)
RECURSIVE StartBelow(_, _)
StartBelow(bumped, epoch) == IF epoch > 0 /\ epoch \in bumped THEN StartBelow(bumped, epoch - 1) ELSE epoch

LeadershipStart(ctl, epoch) == IF EpochBump THEN StartBelow(ctl.bumped, epoch) ELSE epoch

(* How many elections the controller has held: every epoch after the       *)
(* first, but bumps (ReplicationModel._elections). With the bump, epochs   *)
(* run to MaxElections + MaxCrashes (model/epoch_bumps.py greatest_epoch). *)
Elections(ctl) == ctl.epoch - Cardinality(Bumped(ctl))

(* The eligible leader replicas (model/state.py Controller.elr): none      *)
(* without EligibleLeaders, whose controller has no such field.            *)
Elr(ctl) == IF EligibleLeaders THEN ctl.elr ELSE {}

WithElr(ctl, elr) == IF EligibleLeaders THEN [ctl EXCEPT !.elr = elr] ELSE ctl

(* The last known leader (Controller.last_known_elr, KAFKA-15584): a set  *)
(* of at most one replica, none without EligibleLeaders.                   *)
LastKnownElr(ctl) == IF EligibleLeaders THEN ctl.lastKnownElr ELSE {}

WithLastKnownElr(ctl, last) == IF EligibleLeaders THEN [ctl EXCEPT !.lastKnownElr = last] ELSE ctl

(* The ISR the controller's leader works with: the controller's, and the   *)
(* members the controller removed that it has not read (MetadataLag;       *)
(* ReplicationModel._isr_of).                                              *)
LeaderIsr(ctl) == ctl.isr \cup ctl.unseen

(* The partition state without an AlterPartition in flight: a new         *)
(* partition epoch drops it (replication.dropped_proposal).                *)
Dropped(ctl) == [ctl EXCEPT !.proposal = {}, !.reregistered = {}]

(* The ISR the leader counts its HW and acknowledgements over: the ISR and *)
(* the member its AlterPartition in flight adds (PendingExpandIsr.         *)
(* maximalIsr, KIP-497; ReplicationModel._maximal_isr).                    *)
MaximalIsr(ctl) == LeaderIsr(ctl) \cup ctl.proposal

(* The replicas in a new leader epoch: every delayed fetch is fenced       *)
(* (FENCED_LEADER_EPOCH; replication.fenced_fetches).                      *)
FencedFetches(rs) == [m \in Replicas |-> [rs[m] EXCEPT !.delayedFetch = 0, !.delayedFetchStale = FALSE]]

(* The controller's partition state with the ISR isr (unclean: a broker    *)
(* back from an unclean shutdown; ReplicationModel._isr_change). With      *)
(* EligibleLeaders (PartitionChangeBuilder.maybePopulateTargetElr): an ISR *)
(* of MinIsr members or more empties the ELR; a smaller one adds the old   *)
(* ISR's members to it, less the new ISR's and unclean; an ISR that       *)
(* becomes empty keeps the leader, or where there is none its last        *)
(* member, as the last known leader (KAFKA-15584,                          *)
(* maybeUpdateLastKnownLeader).                                            *)
IsrChange(ctl, isr, unclean) ==
    WithLastKnownElr(
        WithElr([Dropped(ctl) EXCEPT !.isr = isr],
                IF Cardinality(isr) >= MinIsr THEN {} ELSE (Elr(ctl) \cup ctl.isr) \ (isr \cup unclean)),
        IF ctl.isr # {} /\ isr = {}
        THEN IF ctl.leader = NoLeader THEN ctl.isr ELSE {ctl.leader}
        ELSE LastKnownElr(ctl))

(* Whether a follower's fetch or OffsetsForLeaderEpoch request from an     *)
(* epoch reaches the controller's leader (ReplicationModel._acting_leader, *)
(* EpochBumpModel._acting_leader): without network failures that leader,   *)
(* live, is the only replica acting as leader, and it leads in the         *)
(* controller's epoch. It answers its own epoch only: from 2.1 it fences   *)
(* an older one (KIP-320), and before a bump no older epoch is of its      *)
(* leadership. Up to 2.0 (SkipsSameLeader) requests carry no epoch: any    *)
(* epoch of its leadership reaches it.                                     *)
AnswersFrom(epoch) ==
    IF SkipsSameLeader
    THEN LeadershipStart(controller, controller.epoch) <= epoch /\ epoch <= controller.epoch
    ELSE epoch = controller.epoch

(* The leader's HW rises to the least LEO over the ISR as it knows them;   *)
(* it never falls. With HwNeedsMinIsr it stays put while the ISR has fewer *)
(* than MinIsr members (KAFKA-15583).                                      *)
HwAdvanced(rs, ctl) ==
    LET l == LeaderOf(rs, ctl)
        isrLeos == {IF m = l THEN Leo(rs[l]) ELSE rs[l].remoteLeos[m] : m \in MaximalIsr(ctl)}
    IN  IF l = NoLeader \/ (HwNeedsMinIsr /\ Cardinality(LeaderIsr(ctl)) < MinIsr) THEN rs
        ELSE [rs EXCEPT ![l].hw = Greater(@, MinOf(isrLeos))]

(* Every record below the leader's HW joins the committed history.         *)
CommittedWith(rs, ctl) ==
    LET l == LeaderOf(rs, ctl)
    IN  IF l = NoLeader THEN committed
        ELSE committed \cup {<<o, rs[l].log[o + 1].msg>> : o \in 0 .. rs[l].hw - 1}

(* With acks=all, the records the leader's HW passes while its ISR has at  *)
(* least MinIsr members are acknowledged (Partition.                       *)
(* checkEnoughReplicasReachOffset); otherwise NotEnoughReplicasAfterAppend. *)
(* Only the leader that took a write acknowledges it: its own records carry *)
(* an epoch of its leadership (its epoch, or one an epoch bump continued); *)
(* a crash or a new election ends the wait with an error.                  *)
AckedWith(before, after, ctl) ==
    LET l == LeaderOf(after, ctl)
        start == LeadershipStart(ctl, after[l].epoch)
        own(record) == start <= record.epoch /\ record.epoch <= after[l].epoch
    IN  IF l = NoLeader \/ ~AcksAll \/ Cardinality(MaximalIsr(ctl)) < MinIsr THEN acked
        ELSE acked \cup {after[l].log[o + 1].msg : o \in {o \in before[l].hw .. after[l].hw - 1 :
                                                          own(after[l].log[o + 1])}}

(* The replicas and controller an event produced become the next state,    *)
(* after the leader has advanced its HW; `sent` is acknowledged at once.    *)
CommitAcking(rs, ctl, sent) ==
    LET advanced == HwAdvanced(rs, ctl)
    IN  /\ replicas' = advanced
        /\ controller' = ctl
        /\ committed' = CommittedWith(advanced, ctl)
        /\ acked' = AckedWith(rs, advanced, ctl) \cup sent

Commit(rs, ctl) == CommitAcking(rs, ctl, {})

(* The controller's leader l acts on the LeaderAndIsr of an epoch bump as  *)
(* a leader already (Partition.makeLeader with isNewLeader false): it      *)
(* keeps its view of the followers and its purgatory, takes the epoch for  *)
(* its next appends, and from 2.0.1 on (KAFKA-7415) caches it at its LEO   *)
(* at once. A crashed leader never gets it (EpochBumpModel._take_bump).    *)
TakeBump(rs, l, epoch) ==
    IF Alive(rs[l]) /\ rs[l].role = Leader
    THEN [rs EXCEPT ![l].epoch = epoch, ![l].epochs = EpochsOnBecomeLeader(@, epoch, Leo(rs[l]))]
    ELSE rs

----------------------------------------------------------------------------
(***************************************************************************)
(* Initial states: a new partition, empty logs, epoch 0, every replica in  *)
(* the ISR, any replica leading, named in every replica's leaderId         *)
(* (ReplicationModel._initial_state).                                      *)
(***************************************************************************)
NewFollower(first) ==
    [log |-> <<>>, hw |-> 0, epochs |-> <<>>, status |-> Up, role |-> Follower, epoch |-> 0,
     response |-> NoResponse, remoteLeos |-> NoRemoteLeos, leaderId |-> Remembered(first),
     delayedFetch |-> 0, delayedFetchStale |-> FALSE]

Init ==
    \E first \in Replicas :
        /\ replicas = [r \in Replicas |->
                IF r = first
                THEN [NewFollower(first) EXCEPT !.role = Leader,
                                                !.epochs = EpochsOnBecomeLeader(<<>>, 0, 0),
                                                !.remoteLeos = [m \in Replicas |-> Unknown]]
                ELSE NewFollower(first)]
        /\ controller = CASE EpochBump /\ EligibleLeaders ->
                                [leader |-> first, epoch |-> 0, isr |-> Replicas, bumped |-> {}, elr |-> {},
                                 lastKnownElr |-> {}, proposal |-> {}, reregistered |-> {}, unseen |-> {}]
                           [] EpochBump ->
                                [leader |-> first, epoch |-> 0, isr |-> Replicas, bumped |-> {},
                                 proposal |-> {}, reregistered |-> {}, unseen |-> {}]
                           [] EligibleLeaders ->
                                [leader |-> first, epoch |-> 0, isr |-> Replicas, elr |-> {},
                                 lastKnownElr |-> {}, proposal |-> {}, reregistered |-> {}, unseen |-> {}]
                           [] OTHER -> [leader |-> first, epoch |-> 0, isr |-> Replicas,
                                        proposal |-> {}, reregistered |-> {}, unseen |-> {}]
        /\ written = 0
        /\ crashes = 0
        /\ committed = {}
        /\ acked = {}
        /\ delays = 0
        /\ diskFailures = 0

----------------------------------------------------------------------------
(***************************************************************************)
(* Actions, each the event of one replica r.                               *)
(***************************************************************************)

(* Produce: the leader appends a producer record in its epoch. With        *)
(* acks=all it refuses (NotEnoughReplicas) while the ISR is smaller than   *)
(* min.insync.replicas.                                                    *)
ProducerWrite(r) ==
    LET rep == replicas[r]
        record == [msg |-> written + 1, epoch |-> rep.epoch]
    IN  /\ r = CurrentLeader
        /\ written < MaxMessages
        /\ AcksAll => Cardinality(LeaderIsr(controller)) >= MinIsr
        /\ CommitAcking([replicas EXCEPT ![r] =
                            [rep EXCEPT !.log = Append(@, record),
                                        !.epochs = EpochsAfterAppend(@, <<record>>, Leo(rep))]],
                        controller,
                        IF AcksAll THEN {} ELSE {written + 1})
        /\ written' = written + 1
        /\ UNCHANGED <<crashes, delays>>

(* Fetch, first half: the leader handles follower r's FetchRequest, whose  *)
(* fetch offset is r's LEO. It takes that offset as r's LEO, adds r to the *)
(* ISR if the protocol lets it join (Partition.maybeExpandIsr; not while   *)
(* an AlterPartition is in flight), recomputes its HW and builds a         *)
(* response with the records from that offset on and the new HW. A fetch   *)
(* beyond the leader's LEO gets OffsetOutOfRange, carrying the leader's    *)
(* LEO; a fetch the protocol finds diverging gets no records and the       *)
(* offset to truncate to (flagged as out of range), and updates the        *)
(* leader's view only if RecordsDivergingFetch. A delayed fetch r waits    *)
(* for is this one. HandleFetch is the event in the replicas rs0 and the   *)
(* partition state ctl0: the current ones, or those of KAFKA-15221's race  *)
(* (LeaderHandleStaleFetch); with delay, the AlterPartition adding r stays *)
(* in flight (LeaderSendAlterPartition).                                   *)
HandleFetch(rs0, ctl0, r, delay) ==
    LET l == CurrentLeader
        f == rs0[r]
        offset == Leo(f)
        diverging == FetchDivergence(rs0[l], f, EpochOnElection)
        waited == IF f.delayedFetch > 0 /\ ~f.delayedFetchStale THEN [rs0 EXCEPT ![r].delayedFetch = 0] ELSE rs0
        joins == r \notin LeaderIsr(ctl0) /\ ctl0.proposal = {} /\ MayJoinIsr(rs0[l], offset)
        \* a proposal at an older partition epoch (unseen): refused, it stays pending
        ctl == IF ~joins THEN ctl0
               ELSE IF delay \/ ctl0.unseen # {} THEN [ctl0 EXCEPT !.proposal = {r}, !.reregistered = {}]
               ELSE IsrChange(ctl0, ctl0.isr \cup {r}, {})
        seen == [waited EXCEPT ![l].remoteLeos[r] = offset]
        rs == HwAdvanced(seen, ctl)
        divergingResponse(hw) == [offset |-> diverging, hw |-> hw, records |-> <<>>, outOfRange |-> TRUE]
    IN  /\ l # NoLeader
        /\ l # r
        /\ f.response = NoResponse
        /\ Alive(f)
        /\ f.role = Follower
        /\ AnswersFrom(f.epoch)
        /\ IF diverging = Unknown /\ offset > Leo(rs0[l])
           THEN /\ replicas' = [waited EXCEPT ![r].response =
                                  [offset |-> Leo(rs0[l]), hw |-> rs0[l].hw,
                                   records |-> <<>>, outOfRange |-> TRUE]]
                /\ controller' = ctl0
                /\ UNCHANGED <<history, delays>>
           ELSE IF diverging # Unknown /\ ~RecordsDivergingFetch
           THEN /\ replicas' = [waited EXCEPT ![r].response = divergingResponse(rs0[l].hw)]
                /\ controller' = ctl0
                /\ UNCHANGED <<history, delays>>
           ELSE LET response == IF diverging # Unknown THEN divergingResponse(rs[l].hw)
                                ELSE [offset |-> offset, hw |-> rs[l].hw,
                                      records |-> Suffix(rs[l].log, offset), outOfRange |-> FALSE]
                IN  /\ replicas' = [rs EXCEPT ![r].response = response]
                    /\ committed' = CommittedWith(rs, ctl)
                    /\ acked' = AckedWith(seen, rs, ctl)
                    /\ controller' = ctl
                    /\ delays' = IF delay /\ joins /\ ctl0.unseen = {} THEN delays + 1 ELSE delays
        /\ UNCHANGED <<written, crashes>>

LeaderHandleFetchRequest(r) == HandleFetch(replicas, controller, r, FALSE)

(* The leader handles follower r's fetch as LeaderHandleFetchRequest does, *)
(* and the AlterPartition adding r to the ISR stays in flight: enabled     *)
(* only where the fetch sends one, while delays are left                   *)
(* (ReplicationModel.leader_send_alter_partition).                         *)
LeaderSendAlterPartition(r) ==
    /\ delays < MaxDelays
    /\ HandleFetch(replicas, controller, r, TRUE)
    /\ delays' > delays

(* The controller handles the AlterPartition in flight adding r: it adds r *)
(* unless it refuses a broker that is not live (LiveMembersOnly, KIP-841)  *)
(* or registered again since the fetch (ChecksBrokerEpochs, KIP-903:       *)
(* INELIGIBLE_REPLICA); either way nothing is in flight after.             *)
ControllerHandleAlterPartition(r) ==
    /\ controller.proposal = {r}
    /\ controller.unseen = {}  \* else refused at its older partition epoch, and left pending
    /\ IF \/ LiveMembersOnly /\ replicas[r].status = Offline
          \/ ChecksBrokerEpochs /\ r \in controller.reregistered
       THEN /\ controller' = Dropped(controller)
            /\ UNCHANGED <<replicas, history>>
       ELSE Commit(replicas, IsrChange(controller, controller.isr \cup {r}, {}))
    /\ UNCHANGED <<written, crashes, delays>>

(* Follower r sends a fetch at its LEO that the leader handles late, while *)
(* delays are left; it waits for it (its next LeaderHandleFetchRequest is  *)
(* this fetch), and a crash leaves it at the leader, stale                 *)
(* (ReplicationModel.follower_send_delayed_fetch).                         *)
FollowerSendDelayedFetch(r) ==
    LET f == replicas[r]
    IN  /\ delays < MaxDelays
        /\ CurrentLeader # NoLeader
        /\ CurrentLeader # r
        /\ f.delayedFetch = 0
        /\ f.response = NoResponse
        /\ Alive(f)
        /\ f.role = Follower
        /\ AnswersFrom(f.epoch)
        /\ replicas' = [replicas EXCEPT ![r].delayedFetch = Leo(f) + 1]
        /\ delays' = delays + 1
        /\ UNCHANGED <<controller, written, crashes, history>>

(* The leader takes a fetch at an offset as follower r's LEO and advances  *)
(* its HW; with join, r joins the ISR (ReplicationModel._record_fetch).    *)
RecordFetch(rs0, l, r, offset, join) ==
    Commit([rs0 EXCEPT ![l].remoteLeos[r] = offset],
           IF join THEN IsrChange(controller, controller.isr \cup {r}, {}) ELSE controller)

(* The leader handles the fetch r sent before it crashed, with the broker  *)
(* epoch of an earlier incarnation (ReplicationModel.                      *)
(* leader_handle_stale_fetch): refused for a live r with                   *)
(* FencesStaleFetches (KAFKA-15221) and beyond the leader's LEO; else its  *)
(* offset becomes r's LEO in the leader's view and r joins the ISR on it,  *)
(* but with ChecksBrokerEpochs only in KAFKA-15221's race, r's new         *)
(* incarnation fetching while the leader decides (taken wherever it is     *)
(* possible).                                                              *)
LeaderHandleStaleFetch(r) ==
    LET f == replicas[r]
        l == CurrentLeader
        offset == f.delayedFetch - 1
        rs0 == [replicas EXCEPT ![r].delayedFetch = 0, ![r].delayedFetchStale = FALSE]
        joins == /\ r \notin LeaderIsr(controller)
                 /\ controller.proposal = {}
                 /\ MayJoinIsr(replicas[l], offset)
                 /\ LiveMembersOnly => f.status = Up
        raceable == f.response = NoResponse /\ Alive(f) /\ f.role = Follower /\ AnswersFrom(f.epoch)
    IN  /\ f.delayedFetchStale
        /\ l # NoLeader
        /\ l # r
        /\ IF (FencesStaleFetches /\ Alive(f)) \/ offset > Leo(replicas[l])
           THEN /\ replicas' = rs0
                /\ UNCHANGED <<controller, history, delays>>
           ELSE IF ~ChecksBrokerEpochs
           THEN RecordFetch(rs0, l, r, offset, joins) /\ UNCHANGED delays
           ELSE IF ~FencesStaleFetches /\ controller.unseen = {} /\ joins /\ raceable
           THEN HandleFetch(rs0, IsrChange(controller, controller.isr \cup {r}, {}), r, FALSE)
           ELSE RecordFetch(rs0, l, r, offset, FALSE) /\ UNCHANGED delays
        /\ UNCHANGED <<written, crashes>>

(* Fetch, second half: follower r handles the FetchResponse. It appends    *)
(* the records and sets HW = min(its LEO, the response's HW); on           *)
(* OffsetOutOfRange it truncates to the response's offset (the leader's    *)
(* LEO; with TruncateOnFetch, where its log diverges, after taking the HW *)
(* unless DivergingResponseHw is off, KAFKA-14704).                        *)
FollowerHandleFetchResponse(r) ==
    LET f == replicas[r]
        response == f.response
        handled == [f EXCEPT !.response = NoResponse]
    IN  /\ Alive(f)
        /\ response # NoResponse
        /\ replicas' = [replicas EXCEPT ![r] =
              IF response.outOfRange
              THEN Truncate(IF TruncateOnFetch /\ DivergingResponseHw
                            THEN [handled EXCEPT !.hw = Lesser(Leo(f), response.hw)]
                            ELSE handled,
                            response.offset)
              ELSE [handled EXCEPT
                      !.log = @ \o response.records,
                      !.hw = Lesser(Leo(f) + Len(response.records), response.hw),
                      !.epochs = EpochsAfterAppend(@, response.records, Leo(f))]]
        /\ UNCHANGED <<controller, written, crashes, history, delays>>

(* replica.lag.time.max.ms: the leader drops follower r from the ISR, as   *)
(* r has not caught up in time: before KAFKA-7152 (DropsCaughtUp) whatever *)
(* r's LEO, from 2.1.0 only while it has not seen r reach its LEO. Time is *)
(* abstract: this may happen at any moment; not while an AlterPartition is *)
(* in flight (Partition.maybeShrinkIsr, isInflight). (An IF, not a        *)
(* disjunction: TLC would generate the successor once for each true       *)
(* disjunct.)                                                              *)
LeaderShrinkIsr(r) ==
    LET l == CurrentLeader
    IN  /\ l # NoLeader
        /\ l # r
        /\ r \in LeaderIsr(controller)
        /\ controller.proposal = {}
        /\ IF DropsCaughtUp THEN TRUE ELSE replicas[l].remoteLeos[r] < Leo(replicas[l])
        /\ IF controller.unseen # {}  \* refused at an older partition epoch: pending (PendingShrinkIsr)
           THEN /\ controller' = [controller EXCEPT !.proposal = {l}]
                /\ UNCHANGED <<replicas, history>>
           ELSE Commit(replicas, IsrChange(controller, controller.isr \ {r}, {}))
        /\ UNCHANGED <<written, crashes, delays>>

(* LeaderAndIsr: replica r acts on the controller's partition state naming *)
(* another leader in a newer epoch (ReplicationModel.become_follower). The *)
(* truncation protocol decides what it does to its log                     *)
(* (BecomeFollowerReplica), and r remembers the leader (leaderId), unless  *)
(* Partition.makeFollower returns false (SkipsLeaderAndIsr: up to 2.0.0    *)
(* for the leader r follows, leaderReplicaIdOpt.get == newLeaderBrokerId;  *)
(* in 2.0.1 only in the epoch after r's, KAFKA-7164): then r takes the     *)
(* epoch only, keeps its role, log and response in flight, and goes on as  *)
(* it was. (An IF: TLC would generate the successor once for each true     *)
(* disjunct.)                                                              *)
BecomeFollower(r) ==
    LET rep == replicas[r]
    IN  /\ Alive(rep)
        /\ controller.leader # NoLeader
        /\ controller.leader # r
        /\ rep.epoch < controller.epoch
        /\ replicas' = [replicas EXCEPT ![r] =
              IF SkipsLeaderAndIsr(rep, controller.leader, controller.epoch)
              THEN [rep EXCEPT !.epoch = controller.epoch]
              ELSE BecomeFollowerReplica([rep EXCEPT !.epoch = controller.epoch,
                                                     !.response = NoResponse,
                                                     !.remoteLeos = NoRemoteLeos,
                                                     !.leaderId = Remembered(controller.leader)])]
        /\ UNCHANGED <<controller, written, crashes, history, delays>>

(* The broker dies: its log, HW checkpoint and epoch cache survive, but    *)
(* for the cache entries starting at its LEO, dropped when the log is      *)
(* loaded; its in-memory state (role, epoch, response, remote LEOs, the    *)
(* leader it follows) does not (ReplicationModel.replica_crash). A fetch   *)
(* of its in flight is at the leader: it stays, stale.                     *)
ReplicaCrash(r) ==
    /\ Alive(replicas[r])
    /\ crashes < MaxCrashes
    /\ replicas' = [replicas EXCEPT ![r] =
          [TruncateLog(@, Leo(@), TRUE) EXCEPT !.status = Crashed, !.role = NoRole, !.epoch = Unknown,
                                               !.response = NoResponse, !.remoteLeos = NoRemoteLeos,
                                               !.leaderId = NoLeader,
                                               !.delayedFetchStale = replicas[r].delayedFetch > 0]]
    /\ crashes' = crashes + 1
    /\ UNCHANGED <<controller, written, history, delays>>

(* The broker dies and its disk with it: it starts again with an empty     *)
(* log, HW 0 and no epoch cache. One of the crashes, and of the            *)
(* MaxDiskFailures disk failures (counted where that bound can bind).      *)
ReplicaDiskFailure(r) ==
    /\ diskFailures < MaxDiskFailures
    /\ Alive(replicas[r])
    /\ crashes < MaxCrashes
    /\ replicas' = [replicas EXCEPT ![r] =
          [TruncateLog(@, 0, TRUE) EXCEPT !.status = Crashed, !.role = NoRole, !.epoch = Unknown,
                                         !.response = NoResponse, !.remoteLeos = NoRemoteLeos,
                                         !.leaderId = NoLeader,
                                         !.delayedFetchStale = replicas[r].delayedFetch > 0]]
    /\ crashes' = crashes + 1
    /\ diskFailures' = IF MaxDiskFailures < MaxCrashes THEN diskFailures + 1 ELSE diskFailures
    /\ UNCHANGED <<controller, written, history, delays>>

(* The controller takes members out of the ISR on its own, leaving isr,    *)
(* in the partition state ctl, the replicas becoming rs. With MetadataLag  *)
(* its leader reads the change later (LeaderApplyMetadata): it keeps the   *)
(* ISR it knew (unseen) and its pending change, and its HW has nothing new *)
(* to advance on; a change that leaves the ISR as it was reaches a leader  *)
(* that has read every earlier one at once (ReplicationModel.              *)
(* _controller_removes).                                                   *)
ControllerRemoves(rs, ctl, isr, unclean) ==
    IF MetadataLag /\ ctl.leader # NoLeader /\ (isr # ctl.isr \/ ctl.unseen # {})
    THEN /\ replicas' = rs
         /\ controller' = [IsrChange(ctl, isr, unclean) EXCEPT !.proposal = ctl.proposal,
                                                              !.reregistered = ctl.reregistered,
                                                              !.unseen = ctl.unseen \cup (ctl.isr \ isr)]
         /\ UNCHANGED history
    ELSE Commit(rs, IsrChange(ctl, isr, unclean))

(* The broker starts again and registers; it waits for a LeaderAndIsr. A   *)
(* crashed leader restarts only once the controller has noticed its crash, *)
(* and so does any crashed replica where the controller sees every bounce  *)
(* (BounceNoticed, KIP-380). With EligibleLeaders the controller takes the *)
(* new incarnation as an unclean shutdown and removes r from the ISR and   *)
(* the ELR (ReplicationControlManager.handleBrokerUncleanShutdown). The    *)
(* new broker epoch is one an AlterPartition in flight adding r predates   *)
(* (reregistered).                                                         *)
ReplicaRestart(r) ==
    LET rs == [replicas EXCEPT ![r].status = Up]
        ctl == IF r \in controller.proposal THEN [controller EXCEPT !.reregistered = @ \cup {r}] ELSE controller
    IN  /\ ~ Alive(replicas[r])
        /\ ~ (replicas[r].status = Crashed /\ (controller.leader = r \/ BounceNoticed))
        /\ IF EligibleLeaders /\ r \in ctl.isr \cup Elr(ctl)
           THEN ControllerRemoves(rs, ctl, ctl.isr \ {r}, {r})
           ELSE /\ replicas' = rs
                /\ controller' = ctl
                /\ UNCHANGED history
        /\ UNCHANGED <<written, crashes, delays>>

(* The controller sees r's ZooKeeper session expire: a dead leader leaves  *)
(* the partition leaderless; a dead member leaves the ISR unless it is the *)
(* last one (with EligibleLeaders, even the last one:                      *)
(* PartitionChangeBuilder.build).                                          *)
(*                                                                         *)
(* With EpochBump, removing r from the ISR of a leader also writes a new   *)
(* leader epoch with the same leader ("increment the leader epoch even if  *)
(* the ISR changes", 0.11.0.0 KafkaController.removeReplicaFromIsr; 2.1.0  *)
(* ReplicaStateMachine.doRemoveReplicasFromIsr ->                          *)
(* LeaderAndIsr.newLeaderAndIsr), and the leader, unless it crashed and    *)
(* the request is lost, takes it in the same event (TakeBump;              *)
(* EpochBumpModel.controller_notice_failure and _take_bump). The model     *)
(* advances the HW before the bump and again after it, which changes       *)
(* nothing; one Commit after the bump is the same step: the same ISR and   *)
(* LEOs give the same HW, and the bumped epoch continues the leadership    *)
(* (LeadershipStart), so the same writes are acknowledged.                 *)
ControllerNoticeFailure(r) ==
    LET rs == [replicas EXCEPT ![r].status = Offline]
        ctl == IF controller.leader = r
               THEN Dropped([controller EXCEPT !.leader = NoLeader, !.unseen = {}])
               ELSE controller
        remaining == controller.isr \ {r}
        shrunk == IsrChange(ctl, remaining, {})
        bumped == [shrunk EXCEPT !.epoch = @ + 1, !.bumped = @ \cup {controller.epoch + 1}]
    IN  /\ replicas[r].status = Crashed
        /\ IF r \in controller.isr /\ (remaining # {} \/ EligibleLeaders)
           THEN IF EpochBump /\ ctl.leader # NoLeader
                THEN Commit(TakeBump(FencedFetches(rs), ctl.leader, bumped.epoch), bumped)
                ELSE ControllerRemoves(rs, ctl, remaining, {})
           ELSE /\ replicas' = rs
                /\ controller' = ctl
                /\ UNCHANGED history
        /\ UNCHANGED <<written, crashes, delays>>

(* The controller elects live replica r in a new epoch: a live ISR member  *)
(* (with EligibleLeaders, a live ELR member while the ISR is empty, which  *)
(* becomes the only ISR member and leaves the ELR: isValidNewLeader,       *)
(* tryElection); while the ISR and the ELR are empty, the last known      *)
(* leader (KAFKA-15584, canElectLastKnownLeader), before any unclean       *)
(* election; or, when unclean election is enabled and no such member      *)
(* is live, any live replica, which becomes the only ISR member; an        *)
(* unclean election clears the ELR (maybeUpdateRecordElr) and every       *)
(* election the last known leader (maybeUpdateLastKnownLeader). The new    *)
(* leader names itself in leaderId. Any order of clean candidates is       *)
(* explored. The new epoch fences every delayed fetch.                     *)
ControllerElectLeader(r) ==
    LET fenced == FencedFetches(replicas)
        candidate == fenced[r]
        eligible == IF controller.isr # {} THEN controller.isr ELSE Elr(controller)
        liveEligible == {m \in eligible : Alive(replicas[m])}
        clean == r \in liveEligible
        epoch == controller.epoch + 1
        isr == IF clean /\ controller.isr # {} THEN controller.isr ELSE {r}
        elr == IF clean THEN Elr(controller) \ {r} ELSE {}
        byLastKnown == eligible = {} /\ Cardinality(LastKnownElr(controller)) = 1
    IN  /\ controller.leader = NoLeader
        /\ Elections(controller) < MaxElections
        /\ Alive(candidate)
        /\ \/ clean
           \/ IF byLastKnown THEN r \in LastKnownElr(controller) ELSE Unclean /\ liveEligible = {}
        /\ Commit([fenced EXCEPT ![r] =
                      [candidate EXCEPT
                          !.role = Leader,
                          !.epoch = epoch,
                          !.response = NoResponse,
                          !.remoteLeos = [m \in Replicas |-> Unknown],
                          !.epochs = EpochsOnBecomeLeader(@, epoch, Leo(candidate)),
                          !.leaderId = Remembered(r)]],
                  WithLastKnownElr(WithElr([controller EXCEPT !.leader = r, !.epoch = epoch, !.isr = isr], elr),
                                   {}))
        /\ UNCHANGED <<written, crashes, delays>>

(* MetadataLag: the leader r reads the controller's ISR changes it had not *)
(* read in the metadata log (Partition.makeLeader at a newer partition     *)
(* epoch: its ISR replaced, any pending change dropped, then               *)
(* maybeIncrementLeaderHW; ReplicationModel.leader_apply_metadata).        *)
LeaderApplyMetadata(r) ==
    /\ controller.unseen # {}
    /\ r = CurrentLeader
    /\ Commit(replicas, [Dropped(controller) EXCEPT !.unseen = {}])
    /\ UNCHANGED <<written, crashes, delays>>

(* OffsetsForLeaderEpoch, request and response in one event: follower r    *)
(* in the Truncating role asks its leader, truncates to the point the      *)
(* protocol derives (TruncationPoint), and fetches once truncation is      *)
(* complete. Never enabled under hw, whose followers never truncate so.    *)
FollowerTruncateByLeaderEpoch(r) ==
    LET f == replicas[r]
        l == controller.leader
        point == TruncationPoint(replicas[l], f, EpochOnElection)
        truncated == Truncate(f, point[1])
    IN  /\ Alive(f)
        /\ f.role = Truncating
        /\ AnswersFrom(f.epoch)
        /\ l # NoLeader
        /\ Alive(replicas[l])
        /\ replicas[l].role = Leader
        /\ replicas' = [replicas EXCEPT ![r] = IF point[2] THEN [truncated EXCEPT !.role = Follower]
                                                            ELSE truncated]
        /\ UNCHANGED <<controller, written, crashes, committed, acked, delays>>

(* The actions every variant shares but ReplicaDiskFailure, in the order   *)
(* of model/replication.py: none changes diskFailures.                     *)
DiskKeepingNext ==
    \/ \E r \in Replicas : ProducerWrite(r)
    \/ \E r \in Replicas : LeaderHandleFetchRequest(r)
    \/ \E r \in Replicas : FollowerHandleFetchResponse(r)
    \/ \E r \in Replicas : LeaderShrinkIsr(r)
    \/ \E r \in Replicas : BecomeFollower(r)
    \/ \E r \in Replicas : FollowerTruncateByLeaderEpoch(r)
    \/ \E r \in Replicas : ReplicaCrash(r)
    \/ \E r \in Replicas : ReplicaRestart(r)
    \/ \E r \in Replicas : ControllerNoticeFailure(r)
    \/ \E r \in Replicas : ControllerElectLeader(r)
    \/ \E r \in Replicas : LeaderSendAlterPartition(r)
    \/ \E r \in Replicas : ControllerHandleAlterPartition(r)
    \/ \E r \in Replicas : FollowerSendDelayedFetch(r)
    \/ \E r \in Replicas : LeaderHandleStaleFetch(r)
    \/ \E r \in Replicas : LeaderApplyMetadata(r)

(* The actions every variant shares.                                       *)
BaseNext ==
    \/ DiskKeepingNext /\ UNCHANGED diskFailures
    \/ \E r \in Replicas : ReplicaDiskFailure(r)

----------------------------------------------------------------------------
(***************************************************************************)
(* Invariants, as properties/invariants.py.                                *)
(***************************************************************************)

(* Every record once below the leader's HW is at the same offset in the    *)
(* current leader's log, while it is live (the reliability article, Case   *)
(* L).                                                                     *)
NoCommittedDataLoss ==
    controller.leader # NoLeader /\ Alive(replicas[controller.leader]) =>
        LET log == replicas[controller.leader].log
        IN  \A c \in committed : c[1] < Len(log) /\ log[c[1] + 1].msg = c[2]

(* Every write acknowledged to the producer is in the current leader's log *)
(* (Vanlightly's fault-tolerance article).                                *)
NoAckedDataLoss ==
    controller.leader # NoLeader /\ Alive(replicas[controller.leader]) =>
        \A m \in acked : \E o \in 1 .. Len(replicas[controller.leader].log) :
            replicas[controller.leader].log[o].msg = m

(* What a consumer read below a leader's HW stays at its offset. Without   *)
(* network failures there is no deposed leader still serving, so what was *)
(* readable is exactly what was committed.                                 *)
NoConsumedRecordLost == NoCommittedDataLoss

(* No two replicas, live or not, hold different records at an offset below *)
(* both their HWs (the reliability article, Case D).                       *)
NoLogDivergence ==
    \A a, b \in Replicas :
        LET common == Lesser(replicas[a].hw, replicas[b].hw)
        IN  Prefix(replicas[a].log, common) = Prefix(replicas[b].log, common)

(* Every replica's high watermark is at most its log end offset.           *)
HwBelowLeo == \A r \in Replicas : replicas[r].hw <= Leo(replicas[r])

(* Leader epochs never go backwards: record epochs rise along every log,   *)
(* epoch-cache entries rise in epoch and offset, and nobody is ahead of    *)
(* the controller's epoch.                                                 *)
LeaderEpochMonotonic ==
    \A r \in Replicas :
        LET log == replicas[r].log
            cache == replicas[r].epochs
        IN  /\ \A i \in 1 .. Len(log) - 1 : log[i].epoch <= log[i + 1].epoch
            /\ Len(log) > 0 => log[Len(log)].epoch <= controller.epoch
            /\ replicas[r].epoch <= controller.epoch
            /\ \A i \in 1 .. Len(cache) - 1 :
                  cache[i][1] < cache[i + 1][1] /\ cache[i][2] <= cache[i + 1][2]

(* The controller's leader, when there is one, is a member of the ISR.    *)
(* (Before KIP-966 the ISR is never empty; with EligibleLeaders it is      *)
(* empty while the partition has no leader.)                               *)
LeaderInIsr ==
    controller.leader # NoLeader => controller.leader \in controller.isr

(* A replica that is not up has no in-memory leader epoch, response or     *)
(* remote view.                                                            *)
CrashLosesMemory ==
    \A r \in Replicas :
        \/ Alive(replicas[r])
        \/ /\ replicas[r].epoch = Unknown
           /\ replicas[r].response = NoResponse
           /\ replicas[r].remoteLeos = NoRemoteLeos

=============================================================================
