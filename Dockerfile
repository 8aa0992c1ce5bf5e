# Build: bundle the process and the CLI (npm run build → dist/), with dev dependencies.
FROM node:24-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci
COPY . .
RUN npm run build

# Run: production dependencies (better-sqlite3 is native and stays in node_modules), the bundle
# and the migrations. Heap sized for a service whose live data is small (~35 MB per worker under
# load, BENCHMARKS.md): an 8 MB young generation and old space capped at 160 MB keep each process
# under 200 MB; a process that outgrows it fails loudly and its jobs resume from the links.
FROM node:24-bookworm-slim
WORKDIR /app
ENV NODE_ENV=production
ENV NODE_OPTIONS="--enable-source-maps --max-semi-space-size=8 --max-old-space-size=160"
COPY package.json package-lock.json ./
RUN npm ci --omit=dev
COPY --from=build /app/dist ./dist
COPY drizzle ./drizzle
USER node
EXPOSE 3000
CMD ["node", "dist/main.mjs"]
