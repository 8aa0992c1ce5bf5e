# Build: bundle the process and the CLI (npm run build → dist/), with dev dependencies.
FROM node:24-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci
COPY . .
RUN npm run build

# Run: production dependencies (better-sqlite3 is native and stays in node_modules), the bundle
# and the migrations. A 16 MB young generation keeps each process's memory near its live data.
FROM node:24-bookworm-slim
WORKDIR /app
ENV NODE_ENV=production
COPY package.json package-lock.json ./
RUN npm ci --omit=dev
COPY --from=build /app/dist ./dist
COPY drizzle ./drizzle
USER node
EXPOSE 3000
CMD ["node", "--enable-source-maps", "--max-semi-space-size=16", "dist/main.mjs"]
