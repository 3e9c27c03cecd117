#!/bin/sh
# Applies every app's schema (`main.js migrate`: pending migrations under a per-schema advisory lock, so a
# second run, or a run beside a service that migrates itself, is safe) and stops at the first failure.
# The gateway's command migrates the identity schema. Every image carries every app's build, so this runs
# in any of them; APP=migrations makes it the default command.
set -eu
for app in gateway lifecycle runs analytics webhooks; do
  node "dist/apps/${app}/src/main.js" migrate
done
echo "all schemas migrated"
