# Build: bundle the process and the CLI (npm run build → dist/), with dev dependencies. The
# bundle leaves out the development stand-ins (packages/: the provider sandbox, the stand-in
# Shopify), which are development dependencies and never reach the run stage.
FROM node:24-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json .npmrc ./
COPY packages ./packages
COPY bin ./bin
RUN npm ci --no-audit --no-fund
COPY . .
RUN npm run build

# Run: production dependencies only (better-sqlite3 is native and stays in node_modules: it
# loads the binary its package ships, since .npmrc runs no install script and this base has no
# compiler; the stand-ins are dev dependencies, so `npm ci --omit=dev` installs neither), the
# bundle with its Redis scripts (dist/lua), the migrations and the `connector` command. Heap
# sized for a service whose live data is small (~40 MB per worker under load, BENCHMARKS.md): an
# 8 MB young generation and old space capped at 160 MB; glibc's malloc held to two arenas (one
# per allocating thread, its default, grew a worker's memory outside the heap). Together they
# keep each process under 200 MB; a process that outgrows it fails loudly and its jobs resume
# from the links. The benches run their processes the same way (bench/production.ts).
FROM node:24-bookworm-slim
WORKDIR /app
ENV NODE_ENV=production
ENV NODE_OPTIONS="--enable-source-maps --max-semi-space-size=8 --max-old-space-size=160"
ENV MALLOC_ARENA_MAX=2
ENV DATABASE_PATH=/data/connector.sqlite
COPY package.json package-lock.json .npmrc ./
# Before the install: npm links the `connector` command from it (the @connector/cli dependency).
COPY bin ./bin
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force
COPY --from=build /app/dist ./dist
COPY drizzle ./drizzle
# The data directory belongs to the runtime user and only to it: a named volume mounted on /data
# copies this owner and mode when it is first created, so SQLite can open its file there.
RUN mkdir -p /data && chown node:node /data && chmod 0700 /data
VOLUME ["/data"]
USER node
EXPOSE 3000
# Health checks are per role (web: /readyz, worker: /healthz on METRICS_PORT): docker-compose.yml.
CMD ["node", "dist/main.mjs"]
