/** The HTTP transport of the REST client (see {@link Transport}). */
import http from 'node:http'
import https from 'node:https'
import { gunzip } from 'node:zlib'
import { promisify } from 'node:util'
import { KubeConfig } from '@kubernetes/client-node'
import { ExecCredentials, trimBearer, type ExecConfig, type ExecStatus } from './credentials.ts'
import { proxyEnvFor } from './proxy.ts'
import { withRetry } from './retry.ts'
import type { KubeClientOptions } from './types.ts'

const inflate = promisify(gunzip)

/** A raw request of {@link KubeClient.request}. */
export interface RawRequest {
  method: string
  path: string
  query?: URLSearchParams
  /** A string is sent verbatim; anything else as JSON. */
  body?: unknown
  contentType?: string
  /** `Accept`; default `application/json`. */
  accept?: string
  signal?: AbortSignal
}

/** A raw answer. */
export interface RawResponse {
  status: number
  headers: http.IncomingHttpHeaders
  body: string
}

/** Whether two lists of TLS material (strings, Buffers, arrays of them) are equal. */
function sameMaterial(a: readonly unknown[], b: readonly unknown[]): boolean {
  const same = (x: unknown, y: unknown): boolean =>
    Buffer.isBuffer(x) && Buffer.isBuffer(y) ? x.equals(y) : Array.isArray(x) && Array.isArray(y) ? x.length === y.length && x.every((v, i) => same(v, y[i])) : x === y
  return a.length === b.length && a.every((v, i) => same(v, b[i]))
}

/** Methods Go's transport may send again on another connection (net/http `Request.isReplayable`). */
function replayable(method: string): boolean {
  return method === 'GET' || method === 'HEAD'
}

/**
 * The connection to the API server: the kubeconfig's credentials (files re-read, exec plugins run
 * and cached, see credentials.ts), a keep-alive agent per TLS material, proxies, timeouts, gzip, the
 * rate limiter and in-request retries (retry.ts). Answers are raw: status, headers, text.
 */
export class Transport {
  #kc: KubeConfig
  #server: URL
  #opts: KubeClientOptions
  #agent: http.Agent | undefined
  /** The TLS material #agent was made with: when a file or a plugin rotates it, a new pool. */
  #agentKey: readonly unknown[] = []
  #useConfigAgent: boolean
  #exec: ExecCredentials | undefined

  /** @throws Error when the kubeconfig has no current cluster */
  constructor(kc: KubeConfig, opts: KubeClientOptions) {
    const cluster = kc.getCurrentCluster()
    if (!cluster) throw new Error('kubeconfig has no current cluster')
    this.#server = new URL(cluster.server)
    this.#opts = opts
    this.#useConfigAgent = Boolean(cluster.proxyUrl)
    const user = kc.getCurrentUser()
    const exec = user?.exec as ExecConfig | undefined
    if (exec?.command) this.#exec = new ExecCredentials(exec, cluster)
    // client-node refuses plain http unless TLS verification is off, which means nothing for http;
    // a loopback sandbox or `kubectl proxy` is plain http. Its own exec runner is left out: the
    // plugin runs here (see credentials.ts).
    const plainHttp = this.#server.protocol === 'http:' && !cluster.skipTLSVerify
    if (plainHttp || this.#exec) {
      const view = new KubeConfig()
      view.loadFromOptions({
        clusters: kc.clusters.map((c) => (plainHttp && c.name === cluster.name ? { ...c, skipTLSVerify: true } : c)),
        users: kc.users.map((u) => (this.#exec && u.name === user?.name ? { ...u, exec: undefined } : u)),
        contexts: kc.contexts,
        currentContext: kc.currentContext,
      })
      this.#kc = view
    } else this.#kc = kc
  }

  /** The timeout of a request's answer (default 30,000 ms): a watch's bounds its response headers. */
  get requestTimeoutMs(): number {
    return this.#opts.requestTimeoutMs ?? 30_000
  }

  /** The API server's URL. */
  get server(): string {
    return this.#server.origin + this.#server.pathname.replace(/\/$/, '')
  }

  /**
   * Connection options (agent, auth headers) for one request, and the exec credential they use.
   * Credentials may rotate, so they are resolved each time: client-node reads certificate, key and
   * CA files anew and re-reads token files; an exec plugin's credential is cached until it expires.
   */
  async #connection(): Promise<{ agent: http.Agent; headers: Record<string, string>; tls: https.RequestOptions; exec?: ExecStatus }> {
    const opts: https.RequestOptions = {}
    await this.#kc.applyToHTTPSOptions(opts)
    const headers: Record<string, string> = {}
    for (const [k, v] of Object.entries(opts.headers ?? {})) if (v !== undefined) headers[k] = String(v)
    if (opts.auth) headers['Authorization'] = `Basic ${Buffer.from(opts.auth).toString('base64')}`
    const exec = await this.#exec?.get()
    if (exec?.token) headers['Authorization'] = `Bearer ${exec.token}`
    if (exec?.clientCertificateData && exec.clientKeyData) {
      opts.cert = exec.clientCertificateData
      opts.key = exec.clientKeyData
    }
    if (headers['Authorization']) headers['Authorization'] = trimBearer(headers['Authorization'])
    if (this.#useConfigAgent && opts.agent instanceof http.Agent) return { agent: opts.agent, headers, tls: {}, ...(exec ? { exec } : {}) }
    // client-node's agents do not keep connections alive; one socket per request is slow at scale.
    // New TLS material (a rotated certificate file, a new certificate from a plugin) gets a new pool
    // and the old connections are closed, as client-go's connection rotation does.
    const key = [opts.ca, opts.cert, opts.key, opts.pfx, opts.passphrase, opts.servername, opts.rejectUnauthorized]
    if (this.#agent && !sameMaterial(key, this.#agentKey)) {
      this.#agent.destroy()
      this.#agent = undefined
    }
    this.#agentKey = key
    const proxy = proxyEnvFor(this.#server)
    this.#agent ??=
      this.#server.protocol === 'https:'
        ? new https.Agent({ keepAlive: true, ca: opts.ca, cert: opts.cert, key: opts.key, pfx: opts.pfx, passphrase: opts.passphrase, servername: opts.servername, ...(opts.rejectUnauthorized !== undefined ? { rejectUnauthorized: opts.rejectUnauthorized } : {}), ...proxy })
        : new http.Agent({ keepAlive: true, ...proxy })
    return { agent: this.#agent, headers, tls: {}, ...(exec ? { exec } : {}) }
  }

  #url(path: string, query?: URLSearchParams): URL {
    const base = this.#server.pathname.replace(/\/$/, '')
    const url = new URL(this.#server.origin + base + path)
    if (query) url.search = query.toString()
    return url
  }

  /**
   * Opens a request and resolves at its response headers. `timeout.until` says what the timeout
   * bounds: the whole exchange (`end`), or only the wait for the headers (`response`, for watches).
   * A request that fails with a reset before any answer on a reused keep-alive socket (one a load
   * balancer or the server closed while it sat idle) is sent again on another connection, as Go's
   * transport does (net/http `persistConn.shouldRetryRequest`): a GET or HEAD always, any other
   * method only when none of it reached the socket (`nothingWrittenError`: the server cannot have
   * processed it); a write that went out may have been processed and is not sent again.
   */
  async open(req: RawRequest, timeout: { ms: number; until: 'end' | 'response' } | undefined, gzip = false): Promise<{ res: http.IncomingMessage; abort: () => void; exec?: ExecStatus }> {
    const conn = await this.#connection()
    const url = this.#url(req.path, req.query)
    const bodyText = req.body === undefined ? undefined : typeof req.body === 'string' ? req.body : JSON.stringify(req.body)
    const headers: Record<string, string> = { ...conn.headers, Accept: req.accept ?? 'application/json', 'User-Agent': this.#opts.userAgent }
    if (gzip) headers['Accept-Encoding'] = 'gzip'
    if (bodyText !== undefined) {
      headers['Content-Type'] = req.contentType ?? 'application/json'
      headers['Content-Length'] = String(Buffer.byteLength(bodyText))
    }
    const mod = url.protocol === 'https:' ? https : http
    if (req.signal?.aborted) throw new Error(`${req.method} ${req.path}: aborted`)
    return new Promise((resolve, reject) => {
      const r = mod.request(url, { method: req.method, headers, agent: conn.agent, ...conn.tls })
      // The socket's count before this request's bytes: node emits 'socket' before it writes them.
      let sentBefore: number | undefined
      r.once('socket', (s) => (sentBefore = s.bytesWritten))
      // Errors after the first (a socket failing after the answer began) must not go unhandled.
      r.on('error', () => {})
      let timer: NodeJS.Timeout | undefined
      const abort = (): void => {
        if (timer) clearTimeout(timer)
        r.destroy()
      }
      if (timeout !== undefined) {
        const what = timeout.until === 'response' ? 'no response headers' : 'no answer'
        timer = setTimeout(() => r.destroy(new Error(`${req.method} ${req.path}: ${what} within ${timeout.ms} ms`)), timeout.ms)
        r.once('close', () => clearTimeout(timer))
      }
      const signal = req.signal
      if (signal) {
        const aborted = (): void => {
          if (timer) clearTimeout(timer)
          r.destroy(new Error(`${req.method} ${req.path}: aborted`))
        }
        signal.addEventListener('abort', aborted, { once: true })
        r.once('close', () => signal.removeEventListener('abort', aborted))
      }
      r.once('error', (err: NodeJS.ErrnoException) => {
        const nothingWritten = sentBefore !== undefined && r.socket?.bytesWritten === sentBefore
        if (r.reusedSocket && (replayable(req.method) || nothingWritten) && (err.code === 'ECONNRESET' || err.code === 'EPIPE') && !signal?.aborted) {
          if (timer) clearTimeout(timer)
          this.open(req, timeout, gzip).then(resolve, reject)
          return
        }
        reject(err)
      })
      r.once('response', (res) => {
        if (timeout?.until === 'response' && timer) clearTimeout(timer)
        // A refused exec credential is run for again (client-go refreshes on 401).
        if (res.statusCode === 401) this.#exec?.invalidate(conn.exec)
        resolve({ res, abort, ...(conn.exec ? { exec: conn.exec } : {}) })
      })
      r.end(bodyText)
    })
  }

  /**
   * Sends a request and reads the whole answer (any status). Each attempt waits for the rate
   * limiter; a 429 or 5xx with `Retry-After`, or a GET on a reset connection, is sent again up to
   * `maxRetries` times (retry.ts), and the last answer is returned. A 401 to a request made with an
   * exec plugin's credential is sent once more with a fresh one (the server processed nothing).
   */
  async request(req: RawRequest): Promise<RawResponse> {
    const shared = this.#opts.requestSignal?.()
    if (shared) req = { ...req, signal: req.signal ? AbortSignal.any([req.signal, shared]) : shared }
    const signal = req.signal
    return withRetry(() => this.#attempt(req), { method: req.method, path: req.path, signal, ...(this.#opts.maxRetries !== undefined ? { maxRetries: this.#opts.maxRetries } : {}) })
  }

  /** One attempt of {@link request}: waits for the rate limiter, then sends. */
  async #attempt(req: RawRequest): Promise<RawResponse & { exec?: ExecStatus }> {
    if (this.#opts.rateLimiter) {
      try {
        await this.#opts.rateLimiter.wait(req.signal)
      } catch {
        throw new Error(`${req.method} ${req.path}: aborted`)
      }
    }
    const first = await this.#counted(req)
    return first.status === 401 && first.exec ? (await this.#counted(req)) : first
  }

  /** {@link #read}, counted in `rest_client_requests_total` (client-go's `updateURLMetrics`: one per attempt). */
  async #counted(req: RawRequest): Promise<RawResponse & { exec?: ExecStatus }> {
    const count = this.#opts.onRequestResult
    if (!count) return this.#read(req)
    let code = '<error>'
    try {
      const res = await this.#read(req)
      code = String(res.status)
      return res
    } finally {
      count({ code, method: req.method, host: this.#server.host })
    }
  }

  /**
   * Reads a whole answer. Like Go's transport (net/http `DisableCompression` false, as client-go
   * leaves it), it asks for gzip and inflates a gzip answer: kube-apiserver compresses JSON answers
   * over 128 KiB (apiserver `endpoints/handlers/responsewriters/writers.go`,
   * `defaultGzipThresholdBytes`), which is what a relist of thousands of objects is.
   */
  async #read(req: RawRequest): Promise<RawResponse & { exec?: ExecStatus }> {
    const { res, exec } = await this.open(req, { ms: this.#opts.requestTimeoutMs ?? 30_000, until: 'end' }, true)
    const chunks: Buffer[] = []
    await new Promise<void>((resolve, reject) => {
      res.on('data', (c: Buffer) => chunks.push(c))
      res.once('end', resolve)
      res.on('error', reject)
      res.once('close', () => {
        if (!res.complete) reject(new Error(`${req.method} ${req.path}: connection closed before the answer was complete`))
      })
    })
    let body = Buffer.concat(chunks)
    if (res.headers['content-encoding'] === 'gzip') {
      try {
        body = await inflate(body)
      } catch (e) {
        throw new Error(`${req.method} ${req.path}: undecodable gzip answer: ${e instanceof Error ? e.message : String(e)}`)
      }
    }
    return { status: res.statusCode ?? 0, headers: res.headers, body: body.toString('utf8'), ...(exec ? { exec } : {}) }
  }

  /** Closes idle keep-alive connections (open watches end on their own stop functions). */
  close(): void {
    this.#agent?.destroy()
    this.#agent = undefined
  }
}
