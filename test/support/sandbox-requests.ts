/**
 * Test helpers for the sandbox server: requests written like HTTP lines
 * (`call(c, 'PATCH /apis/apps/v1/namespaces/default/deployments/x?fieldManager=m', body, {type: 'apply'})`)
 * that go through the same URL parsing as the HTTP layer, straight into the cluster core.
 */
import { readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseAllDocuments } from 'yaml'
import type { Cluster } from '../../operator/sandbox/cluster.ts'
import { parseResourcePath, verbOf } from '../../operator/sandbox/http.ts'
import type { ApiRequest, KubeObject, WatchEvent } from '../../operator/sandbox/types.ts'

const here = dirname(fileURLToPath(import.meta.url))

/** The test CRDs (Widget with status+scale, Gadget without subresources). */
export function widgetCRDs(): KubeObject[] {
  const text = readFileSync(join(here, '..', 'fixtures', 'sandbox-widgets-crd.yaml'), 'utf8')
  return parseAllDocuments(text).map((d) => d.toJSON() as KubeObject)
}

const contentTypes: Record<string, string> = {
  json: 'application/json-patch+json',
  merge: 'application/merge-patch+json',
  strategic: 'application/strategic-merge-patch+json',
  apply: 'application/apply-patch+yaml',
}

/** What a test reads from a response. */
export interface Result {
  status: number
  // Tests read arbitrary response fields.
  body: any
  headers: Record<string, string>
}

/** Options of {@link call}. */
export interface CallOptions {
  /** Patch type shorthand or a full content type. */
  type?: string
  userAgent?: string
  accept?: string
}

/** Builds the ApiRequest of an HTTP-like line. */
export function request(line: string, body?: unknown, opts: CallOptions = {}): ApiRequest {
  const [method = 'GET', target = '/'] = line.split(' ')
  const url = new URL(target, 'http://sandbox')
  const path = parseResourcePath(url.pathname)
  if (!path) throw new Error(`not a resource path: ${url.pathname}`)
  const verb = verbOf(method, path, url.searchParams)
  if (!verb) throw new Error(`no verb for ${method}`)
  const req: ApiRequest = { verb, group: path.group, version: path.version, resource: path.resource, query: url.searchParams, userAgent: opts.userAgent ?? 'test-client/v0.0.0' }
  if (path.namespace !== undefined) req.namespace = path.namespace
  if (path.name !== undefined) req.name = path.name
  if (path.subresource !== undefined) req.subresource = path.subresource
  if (body !== undefined) req.body = typeof body === 'string' ? body : structuredClone(body)
  if (opts.type) req.contentType = contentTypes[opts.type] ?? opts.type
  else if (method === 'PATCH') req.contentType = contentTypes.merge
  if (opts.accept) req.accept = opts.accept
  return req
}

/** Runs one request synchronously through the cluster core. */
export function call(c: Cluster, line: string, body?: unknown, opts: CallOptions = {}): Result {
  const reply = c.respond(request(line, body, opts))
  return { status: reply.status, body: reply.json !== undefined ? JSON.parse(reply.json) : reply.body, headers: reply.headers ?? {} }
}

/** Starts an in-process watch collecting its events. */
export function collect(c: Cluster, line: string): { events: WatchEvent[]; closed: () => boolean; stop: () => void } {
  const events: WatchEvent[] = []
  let closed = false
  const stop = c.watch({ ...request(line), verb: 'watch' }, (e) => events.push(e), () => (closed = true))
  return { events, closed: () => closed, stop }
}

/** A minimal Deployment. */
export function deployment(name: string, extra: Record<string, unknown> = {}): KubeObject {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name, labels: { app: name } },
    spec: {
      replicas: 1,
      selector: { matchLabels: { app: name } },
      template: { metadata: { labels: { app: name } }, spec: { containers: [{ name: 'app', image: 'memcached:1.6' }] } },
    },
    ...extra,
  }
}

/** A ConfigMap. */
export function configMap(name: string, data: Record<string, string> = { a: '1' }, labels?: Record<string, string>): KubeObject {
  const metadata: KubeObject['metadata'] = { name }
  if (labels) metadata.labels = labels
  return { apiVersion: 'v1', kind: 'ConfigMap', metadata, data }
}

/** A Widget custom resource. */
export function widget(name: string, spec: Record<string, unknown> = { size: 2 }): KubeObject {
  return { apiVersion: 'test.example.com/v1', kind: 'Widget', metadata: { name }, spec }
}

/** Waits until `pred` holds (polling), failing after `ms` — for timers the server runs. */
export async function until(what: string, pred: () => boolean, ms = 10_000): Promise<void> {
  const end = Date.now() + ms
  while (!pred()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 5))
  }
}

/** Lets timers and I/O run. */
export function tick(ms = 0): Promise<void> {
  return new Promise((r) => setTimeout(r, ms))
}
