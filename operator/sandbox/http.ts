/**
 * The sandbox's HTTP face (node:http): URL routing as kube-apiserver lays it out, body decoding
 * per content type, JSON answers, newline-delimited JSON watch streams, Table responses for
 * kubectl, discovery, and the sandbox's own control endpoints under `/sandbox/v1/`:
 *
 * - `GET|PUT /sandbox/v1/faults` — read or replace the fault settings (see faults.ts);
 * - `GET|DELETE /sandbox/v1/requests` — request counters, or reset them;
 * - `GET /sandbox/v1/requests/log?limit=N` — the last N requests.
 *
 * Faults and accounting apply to API requests only, never to the control endpoints.
 */
import { createHash } from 'node:crypto'
import type { IncomingMessage, ServerResponse } from 'node:http'
import type { Auth, UserInfo } from './auth/index.ts'
import type { Cluster, Reply } from './cluster.ts'
import { promisify } from 'node:util'
import { gzip } from 'node:zlib'
import { apiGroup, apiGroupList, apiResourceList, apiVersions, versionInfo } from './discovery.ts'
import { openapiV2, openapiV3GroupVersion, openapiV3Root, type Served } from './openapi.ts'
import { OPENAPI_V2_PROTOBUF, openapiV2Format, openapiV2Protobuf } from './openapi-proto.ts'
import { StatusError, badRequest, resourceNotFound, unsupportedMediaType, methodNotAllowed } from './errors.ts'
import { FaultSpecError } from './faults.ts'
import { negotiateOutput, watchConversion, type OutputTarget } from './negotiation.ts'
import { decodeProtobuf, ProtobufError } from './protobuf.ts'
import { parse as parseYaml } from 'yaml'
import type { ApiRequest, Verb } from './types.ts'

/** Where a resource path points. */
export interface ResourcePath {
  group: string
  version: string
  resource: string
  namespace?: string
  name?: string
  subresource?: string
  /** The legacy `/watch/` path prefix was used. */
  watch: boolean
}

/**
 * Parses `/api/v1/namespaces/x/pods/y/status`, `/apis/apps/v1/deployments`, … into its parts;
 * undefined when the path is not a resource path.
 */
export function parseResourcePath(pathname: string): ResourcePath | undefined {
  let segs: string[]
  try {
    segs = pathname.split('/').filter((s) => s !== '').map(decodeURIComponent)
  } catch {
    return undefined
  }
  let group: string
  let version: string
  let rest: string[]
  if (segs[0] === 'api' && segs.length >= 3) {
    group = ''
    version = segs[1] ?? ''
    rest = segs.slice(2)
  } else if (segs[0] === 'apis' && segs.length >= 4) {
    group = segs[1] ?? ''
    version = segs[2] ?? ''
    rest = segs.slice(3)
  } else return undefined
  let watch = false
  if (rest[0] === 'watch') {
    watch = true
    rest = rest.slice(1)
  }
  const out: ResourcePath = { group, version, resource: '', watch }
  // `namespaces/<ns>/status` and `/finalize` are subresources of a Namespace, not a resource list.
  const namespaced = rest[0] === 'namespaces' && rest.length >= 3 && !(rest.length === 3 && (rest[2] === 'status' || rest[2] === 'finalize'))
  if (namespaced) {
    if (rest.length > 5) return undefined
    out.namespace = rest[1] ?? ''
    rest = rest.slice(2)
  } else if (rest.length > 3) return undefined
  out.resource = rest[0] ?? ''
  if (rest[1] !== undefined) out.name = rest[1]
  if (rest[2] !== undefined) out.subresource = rest[2]
  if (out.resource === '') return undefined
  return out
}

/** The Kubernetes verb of a request, as the API server's request-info resolver classifies it. */
export function verbOf(method: string, path: ResourcePath, query: URLSearchParams): Verb | undefined {
  const watchParam = query.get('watch')
  const watch = path.watch || watchParam === 'true' || watchParam === '1'
  switch (method) {
    case 'GET':
    case 'HEAD':
      if (watch) return 'watch'
      return path.name !== undefined ? 'get' : 'list'
    case 'POST':
      return 'create'
    case 'PUT':
      return 'update'
    case 'PATCH':
      return 'patch'
    case 'DELETE':
      return path.name !== undefined ? 'delete' : 'deletecollection'
    default:
      return undefined
  }
}

function send(res: ServerResponse, status: number, json: string, headers?: Record<string, string>): void {
  const h: Record<string, string | number> = { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(json), 'Cache-Control': 'no-cache, private' }
  if (headers) Object.assign(h, headers)
  res.writeHead(status, h)
  res.end(json)
}

function sendReply(res: ServerResponse, reply: Reply): void {
  if (reply.text !== undefined) {
    res.writeHead(reply.status, { 'Content-Type': 'text/plain', 'Content-Length': Buffer.byteLength(reply.text), ...reply.headers })
    res.end(reply.text)
    return
  }
  send(res, reply.status, reply.json ?? JSON.stringify(reply.body ?? null), reply.headers)
}

/**
 * kube-apiserver gzips a JSON answer larger than 128 KiB, at level 1, when the request's
 * Accept-Encoding lists `gzip` as a bare token (apiserver `endpoints/handlers/responsewriters/
 * writers.go`: `negotiateContentEncoding`, `defaultGzipThresholdBytes`,
 * `defaultGzipContentEncodingLevel`); smaller answers and watches go out as they are.
 */
const gzipThresholdBytes = 128 * 1024
const gzipAsync = promisify(gzip)

function acceptsGzip(header: string | undefined): boolean {
  return (header ?? '').split(',').some((token) => token.trim() === 'gzip')
}

async function sendAnswer(res: ServerResponse, reply: Reply, acceptEncoding: string | undefined): Promise<void> {
  if (reply.text === undefined && acceptsGzip(acceptEncoding)) {
    const json = reply.json ?? JSON.stringify(reply.body ?? null)
    const size = Buffer.byteLength(json)
    if (size > gzipThresholdBytes) {
      const body = await gzipAsync(json, { level: 1 })
      res.writeHead(reply.status, { 'Content-Type': 'application/json', 'Cache-Control': 'no-cache, private', ...reply.headers, 'Content-Encoding': 'gzip', Vary: 'Accept-Encoding', 'Content-Length': body.length })
      res.end(body)
      return
    }
    send(res, reply.status, json, reply.headers)
    return
  }
  sendReply(res, reply)
}

function sendError(res: ServerResponse, e: unknown): void {
  const err = e instanceof StatusError ? e : new StatusError(500, 'InternalError', `Internal error occurred: ${e instanceof Error ? e.message : String(e)}`)
  send(res, err.code, JSON.stringify(err.status), err.headers)
}

function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => resolve(chunks.length === 1 && chunks[0] ? chunks[0] : Buffer.concat(chunks)))
    req.on('error', reject)
  })
}

const jsonTypes = new Set(['application/json', 'application/json-patch+json', 'application/merge-patch+json', 'application/strategic-merge-patch+json'])

/** Decodes a request body by its content type: JSON, or YAML text for apply patches. */
function decodeBody(raw: Buffer, contentType: string | undefined, verb: Verb): unknown {
  if (raw.length === 0) return undefined
  const ct = (contentType ?? 'application/json').split(';')[0]?.trim().toLowerCase() ?? ''
  if (ct === 'application/apply-patch+yaml') return raw.toString('utf8')
  if (ct === 'application/yaml' && verb !== 'patch') {
    try {
      return parseYaml(raw.toString('utf8'), { version: '1.1', uniqueKeys: true }) as unknown
    } catch (e) {
      throw badRequest(`error decoding YAML: ${e instanceof Error ? e.message : String(e)}`)
    }
  }
  if (ct === 'application/vnd.kubernetes.protobuf') {
    try {
      return decodeProtobuf(raw)
    } catch (e) {
      if (!(e instanceof ProtobufError)) throw e
      throw new StatusError(415, 'UnsupportedMediaType', `the sandbox cannot decode this protobuf body (${e.message}); send application/json`)
    }
  }
  if (!jsonTypes.has(ct) && !(verb === 'delete' || verb === 'deletecollection')) {
    throw unsupportedMediaType(['application/json', 'application/yaml'])
  }
  try {
    return JSON.parse(raw.toString('utf8'))
  } catch (e) {
    throw badRequest(`error decoding request body: ${e instanceof Error ? e.message : String(e)}`)
  }
}

/**
 * Creates the request listener for a cluster. With `auth`, every API and discovery request is
 * authenticated, impersonation is applied, and the request is authorized before anything else.
 */
export function createHandler(cluster: Cluster, serverAddress: () => string, auth?: Auth): (req: IncomingMessage, res: ServerResponse) => void {
  return (req, res) => {
    handle(cluster, serverAddress, auth, req, res).catch((e: unknown) => {
      if (!res.headersSent) sendError(res, e)
      else res.destroy()
    })
  }
}

async function handle(cluster: Cluster, serverAddress: () => string, auth: Auth | undefined, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const url = new URL(req.url ?? '/', 'http://sandbox')
  const path = url.pathname
  const method = req.method ?? 'GET'
  if (path.startsWith('/sandbox/v1/')) return control(cluster, method, path, url.searchParams, req, res)
  const resourcePath = parseResourcePath(path)
  if (!resourcePath) return discovery(cluster, serverAddress, auth, method, path, req, res)
  const verb = verbOf(method, resourcePath, url.searchParams)
  if (!verb) throw methodNotAllowed()
  const raw = await readBody(req)
  const apiReq: ApiRequest = { verb, group: resourcePath.group, version: resourcePath.version, resource: resourcePath.resource, query: url.searchParams }
  if (resourcePath.namespace !== undefined) apiReq.namespace = resourcePath.namespace
  if (resourcePath.name !== undefined) apiReq.name = resourcePath.name
  if (resourcePath.subresource !== undefined) apiReq.subresource = resourcePath.subresource
  const contentType = req.headers['content-type']
  if (contentType) apiReq.contentType = contentType
  const ua = req.headers['user-agent']
  if (ua) apiReq.userAgent = ua
  const accept = req.headers['accept']
  if (accept) apiReq.accept = accept
  try {
    if (auth) {
      apiReq.user = auth.identify(req.headers)
      auth.authorizeRequest(apiReq, apiReq.user)
    }
    apiReq.body = decodeBody(raw, contentType, verb)
  } catch (e) {
    cluster.account(apiReq, e instanceof StatusError ? e.code : 500)
    throw e
  }
  if (verb === 'watch') return watch(cluster, apiReq, res)
  const reply = await cluster.dispatch(apiReq, { faults: true, account: true })
  await sendAnswer(res, reply, req.headers['accept-encoding'])
}

async function watch(cluster: Cluster, apiReq: ApiRequest, res: ServerResponse): Promise<void> {
  const target = { verb: 'watch', group: apiReq.group, resource: apiReq.resource, namespace: apiReq.namespace, name: apiReq.name, user: apiReq.user?.username }
  // A watch connection held by a pause is a watch connection too: watch-drop-s cuts it as well.
  const unregister = cluster.faults.onWatchDrop(() => res.destroy())
  res.on('close', unregister)
  await cluster.faults.whenUnpaused()
  const ms = cluster.faults.latencyFor(target)
  if (ms > 0) await new Promise((r) => setTimeout(r, ms))
  if (res.destroyed) return
  const injected = cluster.faults.errorFor(target)
  if (injected) {
    cluster.account(apiReq, injected.code)
    throw injected
  }
  const rv = apiReq.query.get('resourceVersion') ?? ''
  const forceExpire = rv !== '' && rv !== '0' && cluster.faults.expireOnResume(target)
  let output: OutputTarget | undefined
  try {
    output = negotiateOutput(apiReq.accept)
  } catch (e) {
    cluster.account(apiReq, e instanceof StatusError ? e.code : 500)
    throw e
  }
  const table = output?.kind === 'Table' ? cluster.tableRendererFor(apiReq) : undefined
  // PartialObjectMetadata: every event's object, bookmarks included (watch.go, response.go).
  const partial = watchConversion(output)
  let started = false
  let corked = false
  const flush = (): void => {
    if (!corked) return
    corked = false
    res.uncork()
  }
  let stop: () => void = () => {}
  const begin = (): void => {
    if (started) return
    started = true
    res.writeHead(200, { 'Content-Type': 'application/json', 'Cache-Control': 'no-cache, private', 'Transfer-Encoding': 'chunked' })
    res.flushHeaders()
  }
  try {
    stop = cluster.watchRaw(
      apiReq,
      {
        event(type, json) {
          begin()
          // The events of one burst of writes (a controller's cascade runs synchronously) leave
          // in one write to the socket rather than one each.
          if (!corked) {
            corked = true
            res.cork()
            process.nextTick(flush)
          }
          const body = table && type !== 'ERROR' && type !== 'BOOKMARK' ? table(json) : partial && type !== 'ERROR' ? partial(json) : json
          res.write(`{"type":"${type}","object":${body}}\n`)
        },
        close() {
          begin()
          flush()
          res.end()
        },
      },
      { forceExpire },
    )
  } catch (e) {
    cluster.account(apiReq, e instanceof StatusError ? e.code : 500)
    throw e
  }
  cluster.account(apiReq, 200)
  begin()
  // The response's close is the connection's (a request's close only means its body was read).
  res.on('close', stop)
}

async function discovery(cluster: Cluster, serverAddress: () => string, auth: Auth | undefined, method: string, path: string, req: IncomingMessage, res: ServerResponse): Promise<void> {
  await readBody(req)
  const ua = req.headers['user-agent']
  const record = (code: number): void => cluster.account({ verb: 'get', group: '', version: '', resource: '', query: new URLSearchParams(), ...(ua ? { userAgent: ua } : {}) }, code)
  if (auth) {
    // Non-resource URLs are authorized too (system:discovery, system:public-info-viewer).
    try {
      const user: UserInfo = auth.identify(req.headers)
      auth.authorizePath(method, path, user)
    } catch (e) {
      record(e instanceof StatusError ? e.code : 500)
      throw e
    }
  }
  if (method !== 'GET' && method !== 'HEAD') throw methodNotAllowed()
  const trimmed = path.length > 1 && path.endsWith('/') ? path.slice(0, -1) : path
  if (trimmed === '/healthz' || trimmed === '/livez' || trimmed === '/readyz') {
    res.writeHead(200, { 'Content-Type': 'text/plain; charset=utf-8' })
    res.end('ok')
    return
  }
  await cluster.faults.whenUnpaused()
  let body: unknown
  const segs = trimmed.split('/').filter((s) => s !== '')
  if (trimmed === '/version') body = versionInfo()
  else if (trimmed === '/api') body = apiVersions(serverAddress())
  else if (segs[0] === 'api' && segs.length === 2) body = apiResourceList(cluster.registry, '', segs[1] ?? '')
  else if (trimmed === '/apis') body = apiGroupList(cluster.registry)
  else if (segs[0] === 'apis' && segs.length === 2) body = apiGroup(cluster.registry, segs[1] ?? '')
  else if (segs[0] === 'apis' && segs.length === 3) body = apiResourceList(cluster.registry, segs[1] ?? '', segs[2] ?? '')
  else if (trimmed === '/openapi/v3') body = openapiV3Root(cluster.registry)
  else if (segs[0] === 'openapi' && segs[1] === 'v3' && segs[2] === 'api' && segs.length === 4) body = openapiV3GroupVersion(cluster.registry, '', segs[3] ?? '')
  else if (segs[0] === 'openapi' && segs[1] === 'v3' && segs[2] === 'apis' && segs.length === 5) body = openapiV3GroupVersion(cluster.registry, segs[3] ?? '', segs[4] ?? '')
  else if (trimmed === '/openapi/v2') {
    // kube-openapi handler.go: JSON or gnostic's protobuf (client-go's OpenAPISchema), else a bare 406.
    const format = openapiV2Format(req.headers['accept'])
    record(format === undefined ? 406 : 200)
    if (format === undefined) {
      res.writeHead(406, { Vary: 'Accept', 'Content-Length': 0 })
      res.end()
      return
    }
    const doc = openapiV2(cluster.registry)
    const pb = openapiV2Binary(doc)
    if (format === 'protobuf') {
      res.writeHead(200, { 'Content-Type': OPENAPI_V2_PROTOBUF, Vary: 'Accept', Etag: `"${pb.etag}"`, 'Content-Length': pb.bytes.length })
      res.end(pb.bytes)
      return
    }
    await sendAnswer(res, { status: 200, json: doc.json, headers: { Vary: 'Accept', Etag: `"${pb.etag}"` } }, req.headers['accept-encoding'])
    return
  }
  if (body === undefined) {
    record(404)
    throw resourceNotFound()
  }
  record(200)
  await sendAnswer(res, { status: 200, json: isServed(body) ? body.json : JSON.stringify(body) }, req.headers['accept-encoding'])
}

/** The protobuf form of a served `/openapi/v2` document, made once per document, when first asked for; its ETag is the JSON's (handler.go: one ETag, Vary: Accept). */
const v2Binaries = new WeakMap<Served, { bytes?: Buffer; etag: string }>()

function openapiV2Binary(doc: Served): { readonly bytes: Buffer; etag: string } {
  let pb = v2Binaries.get(doc)
  if (!pb) {
    pb = { etag: createHash('sha512').update(doc.json).digest('hex').toUpperCase() }
    v2Binaries.set(doc, pb)
  }
  const entry = pb
  return {
    etag: entry.etag,
    get bytes() {
      entry.bytes ??= openapiV2Protobuf(JSON.parse(doc.json) as Record<string, unknown>)
      return entry.bytes
    },
  }
}

function isServed(b: unknown): b is Served {
  return typeof b === 'object' && b !== null && typeof (b as Served).json === 'string' && typeof (b as Served).hash === 'string'
}

async function control(cluster: Cluster, method: string, path: string, query: URLSearchParams, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const raw = await readBody(req)
  if (path === '/sandbox/v1/faults') {
    if (method === 'GET') return send(res, 200, JSON.stringify(cluster.faults.get()))
    if (method === 'PUT') {
      let spec: unknown
      try {
        spec = raw.length === 0 ? {} : JSON.parse(raw.toString('utf8'))
      } catch (e) {
        throw badRequest(`error decoding fault settings: ${e instanceof Error ? e.message : String(e)}`)
      }
      if (spec === null || typeof spec !== 'object' || Array.isArray(spec)) throw badRequest('fault settings must be a JSON object')
      try {
        return send(res, 200, JSON.stringify(cluster.faults.set(spec as Record<string, unknown>)))
      } catch (e) {
        if (e instanceof FaultSpecError) throw badRequest(e.message)
        throw e
      }
    }
    throw methodNotAllowed()
  }
  if (path === '/sandbox/v1/requests') {
    if (method === 'GET') return send(res, 200, JSON.stringify(cluster.accounting.counts()))
    if (method === 'DELETE') {
      cluster.accounting.reset()
      return send(res, 200, JSON.stringify(cluster.accounting.counts()))
    }
    throw methodNotAllowed()
  }
  if (path === '/sandbox/v1/requests/log') {
    if (method !== 'GET') throw methodNotAllowed()
    const limit = query.get('limit')
    return send(res, 200, JSON.stringify({ items: cluster.accounting.log(limit ? Number(limit) : undefined) }))
  }
  throw resourceNotFound()
}
