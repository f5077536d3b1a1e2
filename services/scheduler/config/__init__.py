"""KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1), read from real YAML.

Why here and not in the framework: upstream splits the same work between apis/config/v1
(defaults: the default plugins and how a profile's enabled/disabled sets merge over them) and
apis/config/validation (field-path errors); the framework only instantiates what this module
resolved. The result is plain data:

- `SchedulerConfiguration`: global knobs and the profiles;
- `Profile.plugins`: for every extension point, the ordered `EnabledPlugin(name, weight)` list
  after merging the profile's sets over the defaults and expanding multiPoint exactly as
  upstream does (explicit per-point entries first when they re-configure a multiPoint plugin,
  then multiPoint plugins, then the other explicit ones; `disabled: "*"` at a point stops the
  expansion there). A score weight comes from `score.enabled` first, then multiPoint; an
  unset weight is 1 (so re-listing a default plugin without a weight resets it to 1, as
  upstream);
- `Profile.plugin_config`: plugin name -> its typed Args (the plugin module's Args, built with
  its `from_dict` when it has one, else field by field with camelCase keys mapped), or the
  checked dict when the plugin module does not exist yet.

Errors name the field path the way apimachinery does (`profiles[1].schedulerName: Duplicate
value: "x"`); all of them are reported at once in one `ConfigError`.

A kubera extension: `outOfTreePlugins: [package.module, package.module:ATTR]` registers
out-of-tree plugins (see registry.load_out_of_tree) before the profiles are read.

The package, lowest layer first (each module imports only the ones listed before it):

- `checks`: field-path helpers shared by every reader;
- `defaults`: the v1 default values (default plugin list, numFeasibleNodesToFind) and
  kubera's second default profile, scheduler-plugins' scheduler;
- `plugins`: merging enabled/disabled/multiPoint per extension point (`resolve_plugins`);
- `types`: the data classes and `default_config()`;
- `args`: pluginConfig args -> typed Args (`build_args`, `build_dataclass`);
- `load`: YAML parsing, durations, validation (`load_config`).

This module re-exports the public names, so `services.scheduler.config` is still the place
to import from.
"""

from __future__ import annotations

from services.scheduler.config.args import (
    ARGS_SCHEMAS,
    build_args,
    build_dataclass,
    camel_to_snake,
)
from services.scheduler.config.defaults import (
    DEFAULT_MULTI_POINT,
    DEFAULT_SCHEDULER_NAME,
    MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND,
    MIN_FEASIBLE_NODES_TO_FIND,
    SCHEDULER_PLUGINS_SCHEDULER_NAME,
    num_feasible_nodes_to_find,
)
from services.scheduler.config.load import (
    load_config,
    parse_duration,
)
from services.scheduler.config.plugins import (
    MAX_SCORE_WEIGHT,
    MIN_SCORE_WEIGHT,
    MULTI_POINT,
    EnabledPlugin,
    resolve_plugins,
)
from services.scheduler.config.types import (
    API_VERSION,
    KIND,
    ConfigError,
    LeaderElectionConfiguration,
    Profile,
    SchedulerConfiguration,
    default_config,
)

__all__ = [
    "API_VERSION",
    "ARGS_SCHEMAS",
    "ConfigError",
    "DEFAULT_MULTI_POINT",
    "DEFAULT_SCHEDULER_NAME",
    "EnabledPlugin",
    "KIND",
    "LeaderElectionConfiguration",
    "MAX_SCORE_WEIGHT",
    "MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND",
    "MIN_FEASIBLE_NODES_TO_FIND",
    "MIN_SCORE_WEIGHT",
    "MULTI_POINT",
    "Profile",
    "SCHEDULER_PLUGINS_SCHEDULER_NAME",
    "SchedulerConfiguration",
    "build_args",
    "build_dataclass",
    "camel_to_snake",
    "default_config",
    "load_config",
    "num_feasible_nodes_to_find",
    "parse_duration",
    "resolve_plugins",
]
