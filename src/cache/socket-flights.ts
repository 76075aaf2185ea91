import type { ServerResponse } from "node:http";
import type { AnswerCache } from "./answer-cache.js";
import type { FlightEntry, FlightFollower } from "./relay-cached.js";
import type { CallHold, SharedCaller } from "./shared-caller.js";

/**
 * A miss in flight on a WebSocket connection's node (ws/cached-calls.ts): identical calls on the label's
 * other connections, and HTTP calls that may not read archive data, wait for its answer.
 */
export interface SocketFlight {
  readonly key: string;
  readonly followers: FlightFollower[];
  readonly timer: NodeJS.Timeout;
  landed: boolean;
  /**
   * The HTTP clients its node call belongs to, when an HTTP batch asked it (batch-cached.ts): a follower
   * with a response joins them, so that the batch's client hanging up does not cancel the call for it.
   */
  caller: SharedCaller | undefined;
}

/**
 * How long a call waits on a connection's call before it asks a node itself: the first call's node may
 * hang without its connection closing, and a follower must not hang with it.
 */
const FOLLOW_MS = 10_000;

/** Each cache's misses in flight on connections, by their key and head epoch. */
const socketFlights = new WeakMap<AnswerCache, Map<string, SocketFlight>>();

function flightsOf(cache: AnswerCache): Map<string, SocketFlight> {
  let flights = socketFlights.get(cache);
  if (flights === undefined) {
    flights = new Map();
    socketFlights.set(cache, flights);
  }
  return flights;
}

const keyOf = (key: string, epoch: number) => `${key}\n${epoch}`;

/** The calls waiting on the cache's connection calls in flight. */
export function socketFollowers(cache: AnswerCache): number {
  let waiting = 0;
  for (const flight of socketFlights.get(cache)?.values() ?? []) waiting += flight.followers.length;
  return waiting;
}

/**
 * Joins a connection's (or an HTTP batch's) call in flight for the same read in the same head epoch: true
 * when there was one, and `follower` is told of its answer (undefined when it has none to share). The
 * follower's `holder` (its HTTP response, a WebSocket call's hold) keeps a batch's node call going while
 * it waits.
 */
export function followSocketFlight(
  cache: AnswerCache,
  key: string,
  epoch: number,
  follower: FlightFollower,
  holder: ServerResponse | CallHold,
): boolean {
  const flight = socketFlights.get(cache)?.get(keyOf(key, epoch));
  if (flight === undefined) return false;
  flight.followers.push(follower);
  flight.caller?.join(holder);
  return true;
}

/**
 * A connection's miss, open for followers until it lands; after FOLLOW_MS it lands with nothing to share.
 * A second miss of the same call (one that could not wait) leaves the first's flight the one followed.
 */
export function openSocketFlight(
  cache: AnswerCache,
  key: string,
  epoch: number,
  caller?: SharedCaller,
): SocketFlight {
  const flights = flightsOf(cache);
  const flight: SocketFlight = {
    key: keyOf(key, epoch),
    followers: [],
    timer: setTimeout(() => landSocketFlight(cache, flight, undefined), FOLLOW_MS).unref(),
    landed: false,
    caller,
  };
  if (!flights.has(flight.key)) flights.set(flight.key, flight);
  return flight;
}

/** The flight's answer, or undefined, to every call waiting on it; once. */
export function landSocketFlight(
  cache: AnswerCache,
  flight: SocketFlight,
  entry: FlightEntry | undefined,
): void {
  if (flight.landed) return;
  flight.landed = true;
  clearTimeout(flight.timer);
  const flights = flightsOf(cache);
  if (flights.get(flight.key) === flight) flights.delete(flight.key);
  for (const follow of flight.followers) follow(entry);
}
