/**
 * The Secret cache, one informer per namespace, started when a CR of that namespace is first
 * reconciled: so the operator lists and watches Secrets only where its RBAC lets it, and that is
 * the namespaces whose owners granted it (a RoleBinding to the `input-secrets` ClusterRole,
 * docs/install.md), never every Secret of the cluster. RBAC cannot grant by label, so the label
 * selector the informers use (`cache.example.com/memcached-input=true`) narrows what is cached, not
 * what may be read; the namespace is the boundary RBAC can draw.
 *
 * A namespace's informer that is refused (403) keeps retrying with its backoff, so a RoleBinding
 * created later is picked up without a restart; until then {@link forbidden} says why its CRs'
 * Secrets cannot be read. With a fixed set of namespaces (`run --namespace`), their informers are
 * made up front and start with the others.
 */
import type { Informer } from '../controller/informer.ts'
import type { SecretSummary } from './secrets.ts'

/** How long a reconcile waits for a namespace's new informer to sync before it renders anyway. */
const PREPARE_WAIT_MS = 10_000

/** Options of {@link SecretInformers}. */
export interface SecretInformersOptions {
  /** An informer of the input Secrets of one namespace (not started). */
  make: (namespace: string) => Informer<SecretSummary>
  /** The namespaces served, when fixed (`run --namespace`); empty: any, each on demand. */
  namespaces: readonly string[]
  /** Called with each informer made, before it starts (event handlers). */
  onInformer: (informer: Informer<SecretSummary>) => void
}

/** The Secret cache of the namespaces the CRs are in (see the module's comment). */
export class SecretInformers {
  #o: SecretInformersOptions
  #byNamespace = new Map<string, Informer<SecretSummary>>()
  /** Namespaces whose list or watch was last refused (403), with the server's message. */
  #refused = new Map<string, string>()
  /** Reconciles waiting in {@link prepare}: a refusal ends their wait. */
  #waiters = new Map<string, Set<() => void>>()
  #started = false
  #stopped = false

  constructor(opts: SecretInformersOptions) {
    this.#o = opts
    for (const ns of opts.namespaces) this.#add(ns)
  }

  /** Every informer made so far. */
  get informers(): Informer<SecretSummary>[] {
    return [...this.#byNamespace.values()]
  }

  /** Starts the informers made so far; those made later start at once. */
  start(): void {
    this.#started = true
    for (const i of this.#byNamespace.values()) i.start()
  }

  stop(): void {
    this.#stopped = true
    for (const i of this.#byNamespace.values()) i.stop()
  }

  get(namespace: string | undefined, name: string): SecretSummary | undefined {
    return namespace === undefined ? undefined : this.#byNamespace.get(namespace)?.get(namespace, name)
  }

  byIndex(): SecretSummary[] {
    return []
  }

  list(): SecretSummary[] {
    return this.informers.flatMap((i) => i.list())
  }

  /** The informers made so far have synced; a namespace's informer made on demand is waited for by {@link prepare}. */
  hasSynced(): boolean {
    return this.#o.namespaces.every((ns) => this.#byNamespace.get(ns)?.hasSynced() ?? false)
  }

  /**
   * Makes sure `namespace` has its informer and waits until it has synced, is refused, or
   * {@link PREPARE_WAIT_MS} passed (the render then reports the Secrets as missing, and their
   * arrival in the cache brings the CR back). Outside fixed namespaces there is nothing to prepare.
   */
  async prepare(namespace: string): Promise<void> {
    if (this.#stopped) return
    if (this.#o.namespaces.length > 0 && !this.#o.namespaces.includes(namespace)) return
    const informer = this.#byNamespace.get(namespace) ?? this.#add(namespace)
    if (informer.hasSynced() || this.#refused.has(namespace)) return
    let timer: NodeJS.Timeout | undefined
    let refused: (() => void) | undefined
    await Promise.race([
      informer.waitForSync(),
      new Promise<void>((resolve) => {
        timer = setTimeout(resolve, PREPARE_WAIT_MS)
        refused = resolve
        const set = this.#waiters.get(namespace) ?? new Set()
        set.add(resolve)
        this.#waiters.set(namespace, set)
      }),
    ])
    clearTimeout(timer)
    if (refused) this.#waiters.get(namespace)?.delete(refused)
  }

  /** Whether the Secrets of `namespace` are as cached as they will be: its informer synced or refused (always, outside fixed namespaces). */
  ready(namespace: string): boolean {
    if (this.#o.namespaces.length > 0 && !this.#o.namespaces.includes(namespace)) return true
    const informer = this.#byNamespace.get(namespace)
    return informer !== undefined && (informer.hasSynced() || this.#refused.has(namespace))
  }

  /** Why the Secrets of `namespace` cannot be read (its informer was refused), or undefined. */
  forbidden(namespace: string): string | undefined {
    return this.#byNamespace.get(namespace)?.hasSynced() ? undefined : this.#refused.get(namespace)
  }

  /** Told by the informer of `namespace` about a failure it retries: a 403 marks the namespace refused until it syncs. */
  failed(namespace: string, err: Error): void {
    if ((err as { status?: unknown }).status !== 403) return
    this.#refused.set(namespace, err.message)
    for (const w of this.#waiters.get(namespace) ?? []) w()
  }

  #add(namespace: string): Informer<SecretSummary> {
    const informer = this.#o.make(namespace)
    this.#byNamespace.set(namespace, informer)
    this.#o.onInformer(informer)
    if (this.#started && !this.#stopped) informer.start()
    return informer
  }
}

