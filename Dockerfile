# syntax=docker/dockerfile:1
# The controller image: TypeScript compiled in a build stage, production dependencies only, run as a non-root user
# on a read-only root filesystem (see config/manager). Build with `npm run docker-build`.
ARG NODE_IMAGE=node:24.21.0-bookworm-slim

FROM ${NODE_IMAGE} AS build
WORKDIR /src
COPY package.json package-lock.json ./
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY api ./api
COPY src ./src
RUN npx tsc -p tsconfig.build.json

FROM ${NODE_IMAGE} AS deps
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund && npm cache clean --force

FROM ${NODE_IMAGE}
LABEL org.opencontainers.image.title="metal3-ipam-ts" \
      org.opencontainers.image.description="Metal3-compatible IP address manager for Cluster API" \
      org.opencontainers.image.licenses="Apache-2.0"
WORKDIR /app
# MALLOC_ARENA_MAX=2: glibc gives each thread that allocates (V8's compiler and GC helpers, libuv's pool) an arena of
# its own, up to 8 per core, and keeps what a burst freed in them. Two arenas leave the controller smaller after a
# burst, for the same CPU (docs/benchmarks.md). The tests and the bench start the compiled controller with this ENV.
ENV NODE_ENV=production MALLOC_ARENA_MAX=2
COPY --from=deps /app/node_modules ./node_modules
COPY --from=build /src/dist ./dist
COPY package.json ./
USER 65532:65532
EXPOSE 9443 8443 8081
# No --optimize-for-size: it gives back some of a burst's garbage once the controller is idle again, but costs clearly
# more controller CPU in a large burst (docs/benchmarks.md), and CPU is what the API server and the controller share. Node refuses V8 flags of that kind in NODE_OPTIONS:
# they go here, where the tests read them from; the Deployment's NODE_OPTIONS (config/manager/manager.yaml) holds the
# heap limits. --expose-gc gives the controller V8's gc(), which its memory release needs (src/runtime/memory.ts: Node
# 24 keeps the heap pages a collection empties until a memory-reducing collection, which only that call runs here).
# --heap-growing-percent=50: after a major collection the old generation may grow to 1.5 times what survived before
# the next one. V8's own choice for a process that allocates slowly is 10-20% over, but at least 8 MiB: the same 8 MiB
# whatever the heap holds, so a controller holding many claims marked its whole, large heap every few seconds while
# serving claims one at a time.
# Go's runtime, which Metal3's controller runs on, lets a heap double (GOGC=100). The cost is RSS: up to half the live
# heap more between collections, which the memory release gives back once the controller is quiet.
ENTRYPOINT ["node", "--expose-gc", "--heap-growing-percent=50", "dist/src/main.js"]
