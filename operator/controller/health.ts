/**
 * The operator's HTTP endpoints: `/healthz` (liveness), `/readyz` (readiness) and `/metrics`
 * (Prometheus text), on bind addresses spelled like controller-runtime's flags
 * (`--metrics-bind-address :8080`, `--health-probe-bind-address :8081`, `0` disables). One
 * node:http server per distinct address; two endpoints given the same address share it.
 * `/metrics` may instead be served over HTTPS with authentication and authorization
 * (`metricsTls`, `metricsAuth`: controller-runtime's secure metrics server), on an address of its
 * own.
 */
import http from 'node:http'
import https from 'node:https'
import type { AddressInfo } from 'node:net'
import type { Registry } from 'prom-client'
import type { MetricsAuthorizer } from './metrics-auth.ts'
import type { KeyPair } from './metrics-tls.ts'

/** A named check: true (or a resolved true) passes. */
export type Check = () => boolean | Promise<boolean>

/** A parsed bind address; `host` undefined means every interface. */
export interface BindAddress {
  host: string | undefined
  port: number
}

/** Thrown for a bind address that cannot be parsed. */
export class BindAddressError extends Error {
  override name = 'BindAddressError'
}

/**
 * Parses `:8080`, `127.0.0.1:8081`, `[::1]:9090`, `8080` (a bare port) or `0` (disabled →
 * `undefined`). `:0` binds a free port.
 * @throws BindAddressError
 */
export function parseBindAddress(address: string): BindAddress | undefined {
  const a = address.trim()
  if (a === '0' || a === '') return undefined
  let host: string | undefined
  let port: string
  const v6 = /^\[([^\]]+)\]:(\d+)$/.exec(a)
  if (v6) {
    host = v6[1]
    port = v6[2] ?? ''
  } else if (/^\d+$/.test(a)) {
    port = a
  } else {
    const i = a.lastIndexOf(':')
    if (i < 0) throw new BindAddressError(`bind address ${JSON.stringify(address)} has no port (expected host:port, :port or 0)`)
    host = a.slice(0, i) || undefined
    port = a.slice(i + 1)
  }
  const n = Number(port)
  if (!/^\d+$/.test(port) || n > 65535) throw new BindAddressError(`bind address ${JSON.stringify(address)} has an invalid port`)
  if (host !== undefined && /[\s/]/.test(host)) throw new BindAddressError(`bind address ${JSON.stringify(address)} has an invalid host`)
  return { host, port: n }
}

/** What the endpoints answer with. */
export interface EndpointsOptions {
  /** Where `/metrics` is served (`0` disables). */
  metricsBindAddress: string
  /** Where `/healthz` and `/readyz` are served (`0` disables). */
  healthProbeBindAddress: string
  /** The metrics registry. */
  registry?: Registry
  /** Liveness checks (default: one that passes while the process runs). */
  healthz?: Record<string, Check>
  /** Readiness checks, e.g. `{ informers: () => informers.every((i) => i.hasSynced()) }`. */
  readyz?: Record<string, Check>
  /** Serve `/metrics` over HTTPS with this certificate (its own address: the probes stay plain HTTP for the kubelet). */
  metricsTls?: KeyPair
  /** Who may read `/metrics` (see metrics-auth.ts); everyone when absent. */
  metricsAuth?: MetricsAuthorizer
}

/** Running endpoint servers. */
export interface Endpoints {
  /** `host:port` actually bound, per endpoint; undefined when disabled. */
  readonly metricsAddress: string | undefined
  readonly healthProbeAddress: string | undefined
  /** Whether `/metrics` is served over HTTPS. */
  readonly metricsSecure: boolean
  /** Replaces the HTTPS certificate of `/metrics` for new connections (a rotated certificate). */
  setMetricsCertificate(pair: KeyPair): void
  /** Stops the servers, cutting open connections. */
  close(): Promise<void>
}

type Route = 'metrics' | 'probes'

async function runChecks(checks: Record<string, Check>): Promise<{ ok: boolean; body: string }> {
  const lines: string[] = []
  let ok = true
  for (const [name, check] of Object.entries(checks)) {
    let passed: boolean
    try {
      passed = (await check()) === true
    } catch {
      passed = false
    }
    if (!passed) ok = false
    lines.push(`[${passed ? '+' : '-'}]${name} ${passed ? 'ok' : 'failed'}`)
  }
  return { ok, body: ok ? 'ok' : `${lines.join('\n')}\ncheck failed` }
}

function handler(routes: Set<Route>, opts: EndpointsOptions): http.RequestListener {
  const healthz = opts.healthz ?? { ping: () => true }
  const readyz = opts.readyz ?? { ping: () => true }
  return (req, res) => {
    const path = new URL(req.url ?? '/', 'http://x').pathname.replace(/\/$/, '') || '/'
    const reply = (status: number, body: string, type = 'text/plain; charset=utf-8'): void => {
      res.writeHead(status, { 'Content-Type': type, 'Content-Length': Buffer.byteLength(body), 'X-Content-Type-Options': 'nosniff' })
      res.end(req.method === 'HEAD' ? undefined : body)
    }
    const route: Route | undefined = path === '/metrics' ? 'metrics' : path === '/healthz' || path === '/readyz' ? 'probes' : undefined
    if (!route || !routes.has(route)) return reply(404, '404 page not found\n')
    if (req.method !== 'GET' && req.method !== 'HEAD') return reply(405, 'method not allowed\n')
    const answer = async (): Promise<void> => {
      if (route === 'metrics') {
        const registry = opts.registry
        if (!registry) return reply(404, '404 page not found\n')
        const refused = await opts.metricsAuth?.(req)
        if (refused) return reply(refused.status, refused.body)
        return reply(200, await registry.metrics(), registry.contentType)
      }
      const r = await runChecks(path === '/healthz' ? healthz : readyz)
      reply(r.ok ? 200 : 500, r.body)
    }
    answer().catch((e: unknown) => {
      if (!res.headersSent) reply(500, `internal error: ${e instanceof Error ? e.message : String(e)}\n`)
      else res.destroy()
    })
  }
}

function hostPort(bind: BindAddress): string {
  return `${bind.host ?? ''}:${bind.port}`
}

/**
 * Starts the servers: one per distinct bind address, each serving the endpoints bound there.
 * @throws BindAddressError, or the listen error (e.g. EADDRINUSE)
 */
export async function startEndpoints(opts: EndpointsOptions): Promise<Endpoints> {
  const metricsBind = parseBindAddress(opts.metricsBindAddress)
  const probeBind = parseBindAddress(opts.healthProbeBindAddress)
  const groups = new Map<string, { bind: BindAddress; routes: Set<Route> }>()
  const addRoute = (bind: BindAddress | undefined, route: Route): void => {
    if (!bind) return
    // Two `:0` are two free ports, not one shared server.
    const key = bind.port === 0 ? `${route}:${hostPort(bind)}` : hostPort(bind)
    const g = groups.get(key) ?? { bind, routes: new Set<Route>() }
    g.routes.add(route)
    groups.set(key, g)
  }
  addRoute(metricsBind, 'metrics')
  addRoute(probeBind, 'probes')
  const secure = opts.metricsTls !== undefined && metricsBind !== undefined
  if (secure && [...groups.values()].some((g) => g.routes.size > 1)) throw new BindAddressError(`metrics served over HTTPS need an address of their own, not the health probes' ${JSON.stringify(opts.healthProbeBindAddress)}`)
  const servers: http.Server[] = []
  let tlsServer: https.Server | undefined
  const bound = new Map<Route, string>()
  const closeAll = async (): Promise<void> => {
    await Promise.all(
      servers.map(
        (s) =>
          new Promise<void>((resolve) => {
            s.close(() => resolve())
            s.closeAllConnections()
          }),
      ),
    )
  }
  try {
    for (const { bind, routes } of groups.values()) {
      const tls = secure && routes.has('metrics') ? opts.metricsTls : undefined
      const server = tls ? https.createServer({ cert: tls.cert, key: tls.key, minVersion: 'TLSv1.2' }, handler(routes, opts)) : http.createServer(handler(routes, opts))
      if (tls) tlsServer = server as https.Server
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject)
        server.listen(bind.port, bind.host, () => {
          server.off('error', reject)
          resolve()
        })
      })
      servers.push(server)
      const a = server.address() as AddressInfo
      const text = a.family === 'IPv6' ? `[${a.address}]:${a.port}` : `${a.address}:${a.port}`
      for (const r of routes) bound.set(r, text)
    }
  } catch (e) {
    await closeAll()
    throw e
  }
  let closed: Promise<void> | undefined
  return {
    metricsAddress: bound.get('metrics'),
    healthProbeAddress: bound.get('probes'),
    metricsSecure: tlsServer !== undefined,
    setMetricsCertificate: (pair) => tlsServer?.setSecureContext({ cert: pair.cert, key: pair.key }),
    close: () => (closed ??= closeAll()),
  }
}
