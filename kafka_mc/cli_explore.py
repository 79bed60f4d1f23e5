"""`kafka-mc explore`: serve a model's state space as a local web app (`kafka_mc.explorer`): click
an enabled action to step, go back and forward, branch off at any step, share the path as a link,
see every property's verdict, and load a counterexample to step through.

Registered on the app by `kafka_mc.cli`. The replication model's options are `check`'s
(`kafka_mc.cli_common`); another model (`--model`) opens with its default configuration, and a
trace (`--trace`) with its own.
"""

from __future__ import annotations

import sys
import webbrowser
from typing import Optional

import typer

from kafka_mc import exitcodes
from kafka_mc.checker.scenario import scenario_models
from kafka_mc.cli_common import (
    AcksOption,
    CrashesOption,
    DeprecatedNetworkFailuresOption,
    ElectionsOption,
    Exit,
    MessagesOption,
    MinIsrOption,
    NetworkFailuresOption,
    NoFlushOption,
    DiskFailuresOption,
    DeprecatedReplacedDisksOption,
    DelaysOption,
    MetadataLagOption,
    PluginOption,
    PropertyOption,
    ProtocolOption,
    ReplicasOption,
    UncleanOption,
    load_plugins,
    load_properties,
    number,
    refuse_unusable,
    replication_config,
)
from kafka_mc.control.replication import ReplicationSystem
from kafka_mc.explorer.app import Explorer, explorer_app
from kafka_mc.explorer.loading import LoadError, load_counterexample
from kafka_mc.explorer.models import model_for, model_settings
from kafka_mc.explorer.paths import trace_path
from kafka_mc.explorer.server import ExplorerServer, is_loopback, listening_socket, url_of

# the models whose configuration is the replication model's (and so takes its options)
REPLICATION_MODELS = ("replication", "replication-failover")
# the parameters of the replication model's options, whose flags are refused where they do not apply
REPLICATION_PARAMETERS = ("protocol", "replicas", "messages", "crashes", "elections", "acks", "min_isr", "unclean",
                          "no_flush", "disk_failures", "replaced_disks", "delays", "metadata_lag", "network_failures",
                          "partitions")


def explore_command(
    ctx: typer.Context,
    protocol: ProtocolOption = "hw",
    plugin: PluginOption = None,
    user_properties: PropertyOption = None,
    replicas: ReplicasOption = "2",
    messages: MessagesOption = "2",
    crashes: CrashesOption = "2",
    elections: ElectionsOption = "1",
    acks: AcksOption = "all",
    min_isr: MinIsrOption = "1",
    unclean: UncleanOption = False,
    no_flush: NoFlushOption = False,
    disk_failures: DiskFailuresOption = "0",
    replaced_disks: DeprecatedReplacedDisksOption = False,
    delays: DelaysOption = "0",
    metadata_lag: MetadataLagOption = False,
    network_failures: NetworkFailuresOption = "0",
    partitions: DeprecatedNetworkFailuresOption = None,
    model: str = typer.Option(ReplicationSystem.name, "--model", metavar="NAME",
                              help=f"The model: {', '.join(scenario_models())} (a control-plane model opens "
                                   "with its default configuration)."),
    trace: Optional[str] = typer.Option(None, "--trace", metavar="FILE",
                                        help="Open on this counterexample: an ITF trace kafka-mc wrote "
                                             "(NAME.itf.json), a scenario file or a shipped scenario's name "
                                             "(e.g. case-l-hw), in its own model and configuration."),
    host: str = typer.Option("127.0.0.1", "--host", metavar="HOST",
                             help="Listen on this address (anything but a loopback address lets others in)."),
    port: str = typer.Option("0", "--port", metavar="N", help="Listen on this port (default: a free one)."),
    open_browser: bool = typer.Option(False, "--open", help="Open the page in the default browser."),
) -> None:
    """Walk a model's state space in a browser: step, go back, branch, share the path as a link,
    and load a counterexample. Serves on 127.0.0.1 and prints the URL; Ctrl-C stops it."""
    load_plugins(plugin)
    extra = load_properties(user_properties)
    models = scenario_models()
    if model not in models:
        raise Exit(exitcodes.BAD_INPUT, f"--model {model!r} is unknown; allowed: {', '.join(models)}")
    given = {param.opts[0]: getattr(ctx.get_parameter_source(param.name or ""), "name", None) == "COMMANDLINE"
             for param in ctx.command.params if param.name in REPLICATION_PARAMETERS}
    port_number = number("--port", port)
    if trace is not None:
        refuse_unusable("--trace", (), {**given, "--model": model != ReplicationSystem.name},
                        why=" (the trace's own model and configuration are explored)")
        try:
            scenario = load_counterexample(trace)
        except LoadError as error:
            raise Exit(exitcodes.BAD_SPEC, str(error)) from None
        name, settings = model_settings(scenario.trace.model)
        explorer = Explorer(name, settings, trace_path(scenario.trace), scenario.title, extra)
    elif model in REPLICATION_MODELS:
        config, _ = replication_config(ctx, protocol=protocol, replicas=replicas, messages=messages, crashes=crashes,
                                       elections=elections, acks=acks, min_isr=min_isr, unclean=unclean,
                                       no_flush=no_flush, network_failures=network_failures, partitions=partitions,
                                       disk_failures=disk_failures, replaced_disks=replaced_disks, delays=delays,
                                       metadata_lag=metadata_lag)
        explorer = Explorer(*model_settings(model_for(model, config.to_dict())), extra=extra)
    else:
        refuse_unusable(f"--model {model}", (), given, why=" (they set the replication model)")
        explorer = Explorer(*model_settings(model_for(model, {})), extra=extra)
    serve(explorer, host, port_number, open_browser)


def serve(explorer: Explorer, host: str = "127.0.0.1", port: int = 0, open_browser: bool = False) -> None:
    """Serve until Ctrl-C: the URL on stdout, a warning on stderr when others can reach it."""
    try:
        sock = listening_socket(host, port)
    except OSError as error:
        raise Exit(exitcodes.BAD_INPUT, f"--host {host} --port {port}: cannot listen there "
                                        f"({error.strerror or error})") from None
    if not is_loopback(host):
        print(f"warning: --host {host} is not a loopback address: anyone who can reach it can use the explorer, "
              "and load files from this machine through it", file=sys.stderr)
    url = url_of(sock)
    print(url, flush=True)
    print("kafka-mc explore: serving; Ctrl-C stops it", file=sys.stderr, flush=True)
    if open_browser:
        webbrowser.open(url)
    try:
        ExplorerServer(explorer_app(explorer), sock).run()
    except KeyboardInterrupt:
        pass
