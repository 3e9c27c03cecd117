#!/bin/sh
# As the database owner (DATABASE_URL): creates each service's role (`admin db-setup`: one role per service,
# reaching only its own schema; passwords from <SERVICE>_DATABASE_PASSWORD), then applies every app's schema
# (`main.js migrate`: pending migrations under a per-schema advisory lock, so a second run, or a run beside a
# service that migrates itself, is safe) and stops at the first failure. Both are idempotent. The gateway's
# command migrates the identity schema. Every image carries every app's build, so this runs in any of them;
# APP=migrations makes it the default command.
set -eu
node dist/apps/admin/src/main.js db-setup
for app in gateway lifecycle runs analytics webhooks egress; do
  node "dist/apps/${app}/src/main.js" migrate
done
echo "all schemas migrated"
