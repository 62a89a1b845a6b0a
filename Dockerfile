# One image for the API and the workers; the command picks the role.
FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json ./
COPY scripts ./scripts
COPY src ./src
COPY workers ./workers
COPY migrations ./migrations
COPY web ./web
RUN npm run build && npm prune --omit=dev

FROM node:20-bookworm-slim
ENV NODE_ENV=production
WORKDIR /app
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY package.json ./
# The operator CLI: docker compose exec api npx switchyard <command> (it runs dist/ as built).
COPY bin ./bin
USER node
EXPOSE 3000
CMD ["node", "--enable-source-maps", "--max-old-space-size=1024", "dist/src/server.js", "api"]
