/**
 * A render failure that keeps every problem found, each already located: a values path
 * (`spec.size: must be >= 0`), a template and line (`templates/deployment.ejs:12`), or an input
 * document. Nothing is applied when rendering fails, so the whole list is what the user sees.
 */
export class RenderError extends Error {
  /** What failed: the values, a template, the YAML a template produced, the input CR, a guard, or a Secret the render needs. */
  readonly kind: 'values' | 'template' | 'yaml' | 'input' | 'guard' | 'secret'
  /** Every problem, one line each, in the order found. */
  readonly problems: string[]

  constructor(kind: RenderError['kind'], problems: string[]) {
    super(problems.length === 1 ? problems[0] : `${problems.length} problems:\n${problems.map((p) => `  - ${p}`).join('\n')}`)
    this.name = 'RenderError'
    this.kind = kind
    this.problems = problems
  }
}

/**
 * A module the running process cannot load: thrown only inside the start-up snapshot of `render`
 * (operator/snapshot), whose entry then runs the command from the sources instead.
 */
export class ModuleUnavailable extends Error {
  readonly id: string
  constructor(id: string) {
    super(`module ${id} is not available in this process`)
    this.name = 'ModuleUnavailable'
    this.id = id
  }
}

/** The 1-based line of `offset` in `text`, to place a problem. */
export function lineAt(text: string, offset: number): number {
  let line = 1
  for (let i = 0; i < offset; i++) if (text.charCodeAt(i) === 10) line++
  return line
}

/** The first line of a message (libraries append context a one-line problem does not need). */
export function firstLine(message: string): string {
  return message.split('\n')[0] ?? message
}

/**
 * The message of a YAML parser's error on one line, without the location the `yaml` library
 * appends (`… at line 6, column 9:`), which the caller gives in its own place.
 */
export function yamlMessage(message: string): string {
  return firstLine(message).replace(/ at line \d+, column \d+:?$/, '')
}

/**
 * A YAML parser's errors as problems: `source:line: message`, one line each. Only the first error
 * of a document: the parser's later ones follow from it (one bad indent gives one error for each
 * line after it).
 */
export function yamlProblems(source: string, errors: readonly { message: string; linePos?: [{ line: number }, ...unknown[]] }[]): string[] {
  return errors.slice(0, 1).map((e) => `${source}:${e.linePos?.[0].line ?? '?'}: ${yamlMessage(e.message)}`)
}

/** The aliases a document may expand: a "billion laughs" file is refused, not expanded. */
const MAX_ALIASES = 100

/**
 * A parsed YAML document as data, with aliases bounded: the `yaml` library throws a bare
 * ReferenceError for a document whose aliases fan out, which becomes a problem placed in `source`.
 */
export function yamlData(doc: { toJS(opts: { maxAliasCount: number }): unknown; contents?: { range?: [number, ...number[]] } | null }, source: string, text?: string): unknown {
  try {
    return doc.toJS({ maxAliasCount: MAX_ALIASES })
  } catch (err) {
    if (!(err instanceof ReferenceError)) throw err
    const line = text !== undefined && doc.contents?.range ? `:${lineAt(text, doc.contents.range[0])}` : ''
    throw new RenderError('input', [`${source}${line}: ${firstLine(err.message)} (more than ${MAX_ALIASES} aliases expanded)`])
  }
}
