/**
 * Credentials that change while the operator runs, handled as client-go handles them:
 * - a kubeconfig `token-file` is re-read (every minute, by client-node's file token source, as
 *   client-go's cached file token source does) instead of being read once at start;
 * - bearer tokens are trimmed (a token file ends in a newline: client-go trims it);
 * - exec credential plugins (client-go's plugin/pkg/client/auth/exec): one run at a time, however
 *   many requests wait; `KUBERNETES_EXEC_INFO` in their environment (with the cluster when the
 *   kubeconfig says `provideClusterInfo`); run again when the credential expires or the server
 *   answers 401.
 * Client certificate and CA files are read by client-node for every request; the client swaps its
 * connection pool when they change (see KubeClient).
 */
import { spawn } from 'node:child_process'
import { existsSync, readFileSync } from 'node:fs'
import { homedir } from 'node:os'
import { delimiter, dirname, isAbsolute, join, resolve } from 'node:path'
import { KubeConfig, type Cluster, type User } from '@kubernetes/client-node'
import { parse } from 'yaml'

/** The `exec` stanza of a kubeconfig user (client.authentication.k8s.io). */
export interface ExecConfig {
  apiVersion?: string
  command: string
  args?: string[]
  env?: { name: string; value: string }[] | null
  provideClusterInfo?: boolean
  interactiveMode?: string
}

/** What a plugin prints: an ExecCredential's status. */
export interface ExecStatus {
  token?: string
  clientCertificateData?: string
  clientKeyData?: string
  expirationTimestamp?: string
}

/**
 * The kubeconfig files to read, as client-node's `loadFromDefault` picks them (KUBECONFIG, else
 * ~/.kube/config when it exists); none means in-cluster configuration.
 */
export function defaultKubeconfigFiles(): string[] {
  const env = process.env.KUBECONFIG
  if (env) return env.split(delimiter).filter(Boolean)
  const home = join(homedir(), '.kube', 'config')
  return existsSync(home) ? [home] : []
}

type RawUser = { name?: unknown; user?: { 'token-file'?: unknown; exec?: { command?: unknown } } }

/**
 * Loads kubeconfig files (the first one's context wins; later files add what it lacks), reading
 * users as client-go does where client-node differs: a `token-file` is relative to the file that
 * names it, and is re-read while the process runs (client-node reads it once at load and re-reads
 * only an auth provider's `tokenFile`, what it uses in a pod: such a user becomes one); an exec
 * plugin's relative command with a slash is relative to the file too (client-node runs it from
 * the working directory). Certificate and CA paths client-node resolves itself.
 */
export function loadKubeconfigFiles(files: readonly string[]): KubeConfig {
  let kc: KubeConfig | undefined
  for (const file of files) {
    const dir = dirname(resolve(file))
    const doc = parse(readFileSync(file, 'utf8')) as { users?: RawUser[] } | null
    if (doc === null || typeof doc !== 'object' || Array.isArray(doc)) throw new Error(`${file} is not a kubeconfig (a YAML map)`)
    const tokenFiles = new Map<string, string>()
    for (const u of Array.isArray(doc.users) ? doc.users : []) {
      const tokenFile = u.user?.['token-file']
      if (typeof tokenFile === 'string' && typeof u.name === 'string') {
        u.user!['token-file'] = resolve(dir, tokenFile)
        tokenFiles.set(u.name, resolve(dir, tokenFile))
      }
      const exec = u.user?.exec
      if (exec && typeof exec.command === 'string' && !isAbsolute(exec.command) && exec.command.includes('/')) exec.command = resolve(dir, exec.command)
    }
    const one = new KubeConfig()
    one.loadFromString(JSON.stringify(doc))
    one.makePathsAbsolute(dir)
    for (const user of one.users) {
      const path = tokenFiles.get(user.name)
      if (path === undefined || user.authProvider) continue
      // The file wins over an inline token, as in client-go's bearer round tripper.
      const mutable = user as { -readonly [K in keyof User]: User[K] }
      delete mutable.token
      mutable.authProvider = { name: 'tokenFile', config: { tokenFile: path } }
    }
    if (kc) kc.mergeConfig(one)
    else kc = one
  }
  return kc ?? new KubeConfig()
}

/** `Bearer <token>` with the token's surrounding white space removed, as client-go reads token files. */
export function trimBearer(header: string): string {
  const m = /^(Bearer)\s+([\s\S]*)$/i.exec(header)
  return m ? `${m[1]} ${m[2]!.trim()}` : header.trim()
}

/** Runs an exec credential plugin the way client-go does, and caches what it prints. */
export class ExecCredentials {
  #exec: ExecConfig
  #cluster: Cluster | undefined
  #cached: ExecStatus | undefined
  #running: Promise<ExecStatus> | undefined
  #now: () => number

  /**
   * @param exec the user's exec stanza
   * @param cluster the current cluster (for `provideClusterInfo`)
   */
  constructor(exec: ExecConfig, cluster: Cluster | undefined, now: () => number = Date.now) {
    this.#exec = exec
    this.#cluster = cluster
    this.#now = now
  }

  /** The current credential: cached until it expires, else from one run of the plugin. */
  async get(): Promise<ExecStatus> {
    const c = this.#cached
    if (c && (c.expirationTimestamp === undefined || Date.parse(c.expirationTimestamp) > this.#now())) return c
    this.#running ??= this.#run().finally(() => (this.#running = undefined))
    return this.#running
  }

  /** Forgets `used` (the server refused it): the next request runs the plugin again. */
  invalidate(used: ExecStatus | undefined): void {
    if (used === undefined || this.#cached === used) this.#cached = undefined
  }

  #environment(): NodeJS.ProcessEnv {
    const env: NodeJS.ProcessEnv = { ...process.env }
    for (const e of this.#exec.env ?? []) env[e.name] = e.value
    const apiVersion = this.#exec.apiVersion ?? 'client.authentication.k8s.io/v1'
    const spec: Record<string, unknown> = { interactive: false }
    if (this.#exec.provideClusterInfo && this.#cluster) {
      const c = this.#cluster
      const ca = c.caData ?? (c.caFile ? readFileSync(c.caFile).toString('base64') : undefined)
      spec.cluster = {
        server: c.server,
        ...(c.tlsServerName ? { 'tls-server-name': c.tlsServerName } : {}),
        ...(c.skipTLSVerify ? { 'insecure-skip-tls-verify': true } : {}),
        ...(ca ? { 'certificate-authority-data': ca } : {}),
        ...(c.proxyUrl ? { 'proxy-url': c.proxyUrl } : {}),
      }
    }
    env.KUBERNETES_EXEC_INFO = JSON.stringify({ apiVersion, kind: 'ExecCredential', spec })
    return env
  }

  #run(): Promise<ExecStatus> {
    const command = this.#exec.command
    return new Promise<ExecStatus>((done, fail) => {
      const child = spawn(command, this.#exec.args ?? [], { env: this.#environment(), stdio: ['ignore', 'pipe', 'pipe'] })
      let out = ''
      let err = ''
      child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d))
      child.stderr.setEncoding('utf8').on('data', (d: string) => (err += d))
      child.once('error', (e) => fail(new Error(`exec plugin ${command}: ${e.message}`)))
      child.once('close', (code) => {
        if (code !== 0) return fail(new Error(`exec plugin ${command} exited ${code}: ${err.trim()}`))
        try {
          const cred = JSON.parse(out) as { kind?: string; status?: ExecStatus }
          const status = cred.status
          if (cred.kind !== 'ExecCredential' || !status || (!status.token && !(status.clientCertificateData && status.clientKeyData))) {
            throw new Error('not an ExecCredential with a token or a client certificate and key')
          }
          this.#cached = status
          done(status)
        } catch (e) {
          fail(new Error(`exec plugin ${command}: ${e instanceof Error ? e.message : String(e)}`))
        }
      })
    })
  }
}
