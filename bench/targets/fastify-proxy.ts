// @fastify/http-proxy with its defaults (undici underneath), logging off.
import proxy from "@fastify/http-proxy";
import Fastify from "fastify";

const app = Fastify({ logger: false });
await app.register(proxy, { upstream: process.env.BENCH_UPSTREAM as string });
await app.listen({ port: Number(process.env.BENCH_PORT), host: "127.0.0.1" });
