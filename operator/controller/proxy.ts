/**
 * The proxy of a request to the API server, chosen from HTTPS_PROXY, HTTP_PROXY and NO_PROXY as
 * client-go chooses it when the kubeconfig names no `proxy-url`: Go's `http.ProxyFromEnvironment`
 * (golang.org/x/net/http/httpproxy), wrapped in apimachinery's `NewProxierWithNoProxyCIDR`
 * (k8s.io/apimachinery/pkg/util/net/http.go), so that a NO_PROXY CIDR such as the service network
 * (`172.30.0.0/16`, what OpenShift's cluster-wide proxy injects) bypasses the proxy for the
 * in-cluster server, which is an IP address. Node's own matcher (`proxyEnv`) knows no CIDRs, so the
 * decision is made here and node is only handed the proxy to use.
 */
import { BlockList, isIP } from 'node:net'

/** The environment variables that choose a proxy. */
export type ProxyEnv = Partial<Record<'HTTPS_PROXY' | 'https_proxy' | 'HTTP_PROXY' | 'http_proxy' | 'NO_PROXY' | 'no_proxy', string | undefined>>

/** Thrown for a proxy variable that names a proxy the client cannot use. */
export class ProxyConfigError extends Error {
  override name = 'ProxyConfigError'
}

/** Go's `getEnvAny`: the first of the names that is set (an empty value counts as unset). */
function envAny(env: ProxyEnv, ...names: (keyof ProxyEnv)[]): string {
  for (const n of names) {
    const v = env[n]
    if (v !== undefined && v !== '') return v
  }
  return ''
}

/** An IP address without brackets or zone, IPv4-mapped IPv6 as IPv4 (Go compares those as IPv4); undefined for a name. */
function parseIp(text: string): { ip: string; family: 'ipv4' | 'ipv6' } | undefined {
  const bare = text.replace(/^\[|\]$/g, '')
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(bare)
  const ip = mapped ? mapped[1]! : bare
  const v = isIP(ip)
  return v === 4 ? { ip, family: 'ipv4' } : v === 6 ? { ip, family: 'ipv6' } : undefined
}

/** Go's `net.ParseCIDR`: `a.b.c.d/n` or `x::y/n`; undefined for anything else. */
function parseCidr(text: string): { ip: string; prefix: number; family: 'ipv4' | 'ipv6' } | undefined {
  const slash = text.indexOf('/')
  if (slash < 0) return undefined
  const ip = parseIp(text.slice(0, slash))
  const bits = text.slice(slash + 1)
  if (!ip || text.slice(0, slash).startsWith('[') || !/^\d{1,3}$/.test(bits)) return undefined
  const prefix = Number(bits)
  if (prefix > (ip.family === 'ipv4' ? 32 : 128)) return undefined
  return { ...ip, prefix }
}

/** Splits `host:port` / `[v6]:port` as Go's `net.SplitHostPort`; undefined without a port. */
function splitHostPort(text: string): { host: string; port: string } | undefined {
  const m = /^\[([^\]]*)\]:(\d*)$/.exec(text) ?? /^([^:[\]]*):(\d*)$/.exec(text)
  return m ? { host: m[1]!, port: m[2]! } : undefined
}

/**
 * NO_PROXY as Go's httpproxy parses it (`config.init`): entries separated by commas, trimmed and
 * lower-cased; `*` matches everything; an IPv4 or IPv6 CIDR matches the addresses in it; an IP
 * (optionally `ip:port`, `[v6]:port`) matches that address; a name matches itself and its
 * subdomains (`foo.com` matches `bar.foo.com`), `.foo.com` and `*.foo.com` only the subdomains;
 * a name may carry a port.
 */
export class NoProxy {
  #all = false
  #cidrs = new BlockList()
  #ips: { ip: string; family: 'ipv4' | 'ipv6'; port: string }[] = []
  #domains: { suffix: string; port: string; matchHost: boolean }[] = []

  constructor(value: string) {
    for (const raw of value.split(',')) {
      const p = raw.trim().toLowerCase()
      if (p === '') continue
      if (p === '*') {
        this.#all = true
        return
      }
      const cidr = parseCidr(p)
      if (cidr) {
        this.#cidrs.addSubnet(cidr.ip, cidr.prefix, cidr.family)
        continue
      }
      const hp = splitHostPort(p)
      const host = hp ? hp.host : p
      const port = hp ? hp.port : ''
      if (host === '') continue
      const ip = parseIp(host)
      if (ip) {
        this.#ips.push({ ...ip, port })
        continue
      }
      let suffix = host.startsWith('*.') ? host.slice(1) : host
      const matchHost = !suffix.startsWith('.')
      if (matchHost) suffix = `.${suffix}`
      this.#domains.push({ suffix, port, matchHost })
    }
  }

  /** Whether a request to `host` (a name or an IP, brackets allowed) on `port` goes direct. */
  excludes(host: string, port: string): boolean {
    const h = host.trim().toLowerCase().replace(/^\[|\]$/g, '')
    if (this.#all) return true
    const ip = parseIp(h)
    if (ip) {
      if (this.#cidrs.check(ip.ip, ip.family)) return true
      if (this.#ips.some((m) => m.family === ip.family && sameIp(m.ip, ip.ip, ip.family) && (m.port === '' || m.port === port))) return true
    }
    return this.#domains.some((m) => (h.endsWith(m.suffix) || (m.matchHost && h === m.suffix.slice(1))) && (m.port === '' || m.port === port))
  }
}

function sameIp(a: string, b: string, family: 'ipv4' | 'ipv6'): boolean {
  const l = new BlockList()
  l.addAddress(a, family)
  return l.check(b, family)
}

/** Go's `parseProxy`: a value without a scheme is an `http://` proxy; only http and https proxies can be used here. */
function parseProxy(value: string, variable: string): URL {
  let url: URL
  try {
    url = new URL(/^[a-z][a-z0-9+.-]*:\/\//i.test(value) ? value : `http://${value}`)
  } catch {
    throw new ProxyConfigError(`${variable}=${JSON.stringify(value)} is not a proxy URL`)
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new ProxyConfigError(`${variable}=${JSON.stringify(value)}: only http:// and https:// proxies are supported, not ${url.protocol.slice(0, -1)}`)
  return url
}

/**
 * The proxy a request to `server` goes through, or undefined when it goes direct: HTTPS_PROXY for
 * an https server, HTTP_PROXY for an http one, none for `localhost`, a loopback address or a
 * server NO_PROXY excludes (Go's `config.useProxy`, which compares the port with the URL's, its
 * scheme's default when it has none).
 * @throws ProxyConfigError for a proxy variable that is not an http(s) proxy URL
 */
export function proxyFor(server: URL, env: ProxyEnv = process.env): URL | undefined {
  const https = server.protocol === 'https:'
  const variable = https ? 'HTTPS_PROXY' : 'HTTP_PROXY'
  const value = https ? envAny(env, 'HTTPS_PROXY', 'https_proxy') : envAny(env, 'HTTP_PROXY', 'http_proxy')
  if (value === '') return undefined
  const host = server.hostname.replace(/^\[|\]$/g, '').toLowerCase()
  if (host === 'localhost') return undefined
  const ip = parseIp(host)
  if (ip && (ip.family === 'ipv4' ? ip.ip.startsWith('127.') : ip.ip === '::1')) return undefined
  const port = server.port || (https ? '443' : '80')
  if (new NoProxy(envAny(env, 'NO_PROXY', 'no_proxy')).excludes(host, port)) return undefined
  return parseProxy(value, variable)
}

/**
 * The `proxyEnv` option of node's agents (node 24.5 and later) for `server`: only the proxy
 * {@link proxyFor} chose, with no NO_PROXY for node to judge again; nothing when it goes direct.
 */
export function proxyEnvFor(server: URL, env: ProxyEnv = process.env): { proxyEnv?: NodeJS.ProcessEnv } {
  const proxy = proxyFor(server, env)
  if (!proxy) return {}
  return { proxyEnv: server.protocol === 'https:' ? { HTTPS_PROXY: proxy.href } : { HTTP_PROXY: proxy.href } }
}
