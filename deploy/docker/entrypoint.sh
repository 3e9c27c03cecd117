#!/bin/sh
# The image's entry point. APP (a build argument, baked into the image) picks what runs:
#   APP=gateway|lifecycle|runs|analytics|webhooks|egress  serve that app, or run `<image> migrate` to apply its schema and exit
#   APP=migrations                               create the services' database roles, apply every app's schema and exit
#                                                (compose `migrations`, the Kubernetes Job)
# and in every image `<image> admin <command> ...`: the admin CLI (compose's `nats-setup` step and `admin` tool).
# `exec`: node replaces the shell, so tini's signals (SIGTERM on stop) reach it directly.
set -eu
if [ "${1:-}" = admin ]; then
  shift
  exec node dist/apps/admin/src/main.js "$@"
fi
case "${APP:-}" in
  migrations) exec sh ./migrate-all.sh ;;
  gateway | lifecycle | runs | analytics | webhooks | egress) exec node "dist/apps/${APP}/src/main.js" "$@" ;;
  *)
    echo "unknown APP \"${APP:-}\": expected gateway, lifecycle, runs, analytics, webhooks, egress or migrations" >&2
    exit 64
    ;;
esac
