#!/usr/bin/env bash
# A digest of the plugin's Python sources as they lie on disk (not as git names them): run
# on the device machine by tests/gpu/own_call.sh and here at a commit, the two agree when
# the runner measured that commit's code. From the repository's root.
find pytest_gpuperf -name '*.py' -type f | LC_ALL=C sort | xargs cat | sha1sum | cut -c1-12
