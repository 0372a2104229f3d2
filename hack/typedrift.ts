/**
 * Type drift: the field names and required-ness declared by TypeScript sources, read with the compiler's parser (no
 * type checker, no imports resolved), and the differences between two such readings. Used by
 * `hack/drift.test.ts` to hold the hand-written types against the types kubernetes-fluent-client generates
 * from our CRDs.
 *
 * Only syntax is read, one file at a time: interfaces (with `extends` of interfaces of the same file), classes, type
 * aliases, enums, type literals, arrays and `Record`. A type named but not declared in the file (`Date`,
 * `GenericKind`, a utility type) counts as a plain value, so an unsupported construct shows up as missing fields
 * rather than passing silently.
 */
import ts from "typescript";

/** What a field holds, compared alongside its name and required-ness. */
export type FieldShape = "value" | "object" | "list" | "map";

/** One declared field. */
export interface Field {
  required: boolean;
  shape: FieldShape;
}

/**
 * Field path to field. Paths start with the root kind and use `.` for properties, `[]` for list elements and `[*]` for
 * map values: `IPClaim.status.address.name`, `IPPool.spec.pools[].start`, `IPPool.spec.preAllocations[*]`.
 */
export type FieldTable = ReadonlyMap<string, Field>;

/** Names for the two sides of a comparison, as they appear in the report lines. */
export interface SideLabels {
  ours: string;
  theirs: string;
}

/** Root members left out: the envelope every kind shares, whose content the types do not describe field by field. */
export const ENVELOPE_FIELDS: readonly string[] = ["apiVersion", "kind", "metadata"];

type Declaration = ts.InterfaceDeclaration | ts.ClassDeclaration | ts.TypeAliasDeclaration | ts.EnumDeclaration;
type Declarations = ReadonlyMap<string, Declaration>;

interface Member {
  name: string;
  required: boolean;
  type: ts.TypeNode | undefined;
}

/**
 * How a type node is walked: its shape and, for objects, its members, for lists and maps, its element type. `within`
 * names the declarations already entered on the way there, so a self-referencing type ends the walk.
 */
interface Described {
  shape: FieldShape;
  within: ReadonlySet<string>;
  members?: readonly Member[];
  element?: ts.TypeNode | undefined;
}

/** Parses TypeScript source text (nothing is resolved or type-checked). */
export function parseSource(fileName: string, text: string): ts.SourceFile {
  return ts.createSourceFile(fileName, text, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
}

/**
 * Every field reachable from the interface or class `root` of `source`, except the root's `ignored` members.
 * Throws when `root` is not declared there.
 */
export function collectFields(
  source: ts.SourceFile,
  root: string,
  ignored: readonly string[] = ENVELOPE_FIELDS,
): FieldTable {
  const declarations = declarationsOf(source);
  const rootDeclaration = declarations.get(root);
  if (!rootDeclaration || !(ts.isInterfaceDeclaration(rootDeclaration) || ts.isClassDeclaration(rootDeclaration))) {
    throw new Error(`${source.fileName}: no interface or class ${root}`);
  }
  const table = new Map<string, Field>();
  const members = membersOf(rootDeclaration, declarations, new Set([root])).filter((m) => !ignored.includes(m.name));
  addMembers(table, root, members, declarations, new Set([root]));
  return table;
}

/**
 * The differences between two field tables, one readable line each, sorted by path. Below a field missing on one side
 * or shaped differently on the two, nothing more is reported: one line per cause.
 */
export function compareFields(ours: FieldTable, theirs: FieldTable, labels: SideLabels): string[] {
  const lines: string[] = [];
  const settled: string[] = [];
  for (const path of [...new Set([...ours.keys(), ...theirs.keys()])].sort()) {
    if (settled.some((prefix) => isBelow(path, prefix))) continue;
    const [mine, other] = [ours.get(path), theirs.get(path)];
    const line = compareField(path, mine, other, labels);
    if (line === undefined) continue;
    lines.push(line);
    if (!mine || !other || mine.shape !== other.shape) settled.push(path);
  }
  return lines;
}

/** The difference at one path, if any. */
export function compareField(
  path: string,
  ours: Field | undefined,
  theirs: Field | undefined,
  labels: SideLabels,
): string | undefined {
  if (!ours && !theirs) return undefined;
  if (!ours) return `${path}: in ${labels.theirs}, missing in ${labels.ours}`;
  if (!theirs) return `${path}: in ${labels.ours}, missing in ${labels.theirs}`;
  if (ours.shape !== theirs.shape)
    return `${path}: ${article(ours.shape)} in ${labels.ours}, ${article(theirs.shape)} in ${labels.theirs}`;
  if (ours.required === theirs.required) return undefined;
  return ours.required
    ? `${path}: required in ${labels.ours}, optional in ${labels.theirs}`
    : `${path}: required in ${labels.theirs}, optional in ${labels.ours}`;
}

/** Whether `path` lies inside the field at `prefix`. */
export function isBelow(path: string, prefix: string): boolean {
  return path.startsWith(`${prefix}.`) || path.startsWith(`${prefix}[`);
}

function article(shape: FieldShape): string {
  return shape === "object" ? "an object" : `a ${shape}`;
}

function declarationsOf(source: ts.SourceFile): Declarations {
  const found = new Map<string, Declaration>();
  for (const statement of source.statements) {
    const named =
      ts.isInterfaceDeclaration(statement) ||
      ts.isClassDeclaration(statement) ||
      ts.isTypeAliasDeclaration(statement) ||
      ts.isEnumDeclaration(statement);
    if (named && statement.name) found.set(statement.name.text, statement);
  }
  return found;
}

/** Own members after inherited ones, so a redeclared member (a narrower `name: string`) wins. */
function membersOf(
  declaration: ts.InterfaceDeclaration | ts.ClassDeclaration,
  declarations: Declarations,
  seen: ReadonlySet<string>,
): Member[] {
  const byName = new Map<string, Member>();
  for (const base of basesOf(declaration, declarations, seen)) {
    for (const member of membersOf(base, declarations, new Set([...seen, base.name?.text ?? ""])))
      byName.set(member.name, member);
  }
  for (const member of propertiesOf(declaration.members)) byName.set(member.name, member);
  return [...byName.values()];
}

/** `extends` targets declared in the same file (interfaces or classes); others (`GenericKind`) are not followed. */
function basesOf(
  declaration: ts.InterfaceDeclaration | ts.ClassDeclaration,
  declarations: Declarations,
  seen: ReadonlySet<string>,
): (ts.InterfaceDeclaration | ts.ClassDeclaration)[] {
  const bases: (ts.InterfaceDeclaration | ts.ClassDeclaration)[] = [];
  for (const clause of declaration.heritageClauses ?? []) {
    if (clause.token !== ts.SyntaxKind.ExtendsKeyword) continue;
    for (const { expression } of clause.types) {
      const base =
        ts.isIdentifier(expression) && !seen.has(expression.text) ? declarations.get(expression.text) : undefined;
      if (base && (ts.isInterfaceDeclaration(base) || ts.isClassDeclaration(base))) bases.push(base);
    }
  }
  return bases;
}

function propertiesOf(elements: ts.NodeArray<ts.TypeElement | ts.ClassElement>): Member[] {
  const members: Member[] = [];
  for (const element of elements) {
    if (!(ts.isPropertySignature(element) || ts.isPropertyDeclaration(element))) continue;
    const isStatic =
      ts.isPropertyDeclaration(element) && element.modifiers?.some((m) => m.kind === ts.SyntaxKind.StaticKeyword);
    const name = ts.isIdentifier(element.name) || ts.isStringLiteral(element.name) ? element.name.text : undefined;
    if (isStatic || name === undefined) continue;
    members.push({ name, required: element.questionToken === undefined, type: element.type });
  }
  return members;
}

function addMembers(
  table: Map<string, Field>,
  prefix: string,
  members: readonly Member[],
  declarations: Declarations,
  within: ReadonlySet<string>,
): void {
  for (const member of members) {
    const path = `${prefix}.${member.name}`;
    const described = describe(member.type, declarations, within);
    table.set(path, { required: member.required, shape: described.shape });
    descend(table, path, described, declarations);
  }
}

/** Walks into an object's members or a list's or map's element. */
function descend(table: Map<string, Field>, path: string, described: Described, declarations: Declarations): void {
  if (described.members) addMembers(table, path, described.members, declarations, described.within);
  if (described.shape === "list" || described.shape === "map") {
    const elementPath = `${path}${described.shape === "list" ? "[]" : "[*]"}`;
    descend(table, elementPath, describe(described.element, declarations, described.within), declarations);
  }
}

function describe(node: ts.TypeNode | undefined, declarations: Declarations, within: ReadonlySet<string>): Described {
  if (node === undefined) return { shape: "value", within };
  if (ts.isParenthesizedTypeNode(node)) return describe(node.type, declarations, within);
  if (ts.isArrayTypeNode(node)) return { shape: "list", within, element: node.elementType };
  if (ts.isUnionTypeNode(node)) return describeUnion(node, declarations, within);
  if (ts.isTypeLiteralNode(node)) return describeLiteral(node, within);
  if (ts.isTypeReferenceNode(node)) return describeReference(node, declarations, within);
  return { shape: "value", within };
}

/** `T | undefined` and `T | null` are `T`; any other union (of literals, enums, `T | ""`) is a plain value. */
function describeUnion(node: ts.UnionTypeNode, declarations: Declarations, within: ReadonlySet<string>): Described {
  const kept = node.types.filter((t) => !isNullish(t));
  return kept.length === 1 ? describe(kept[0], declarations, within) : { shape: "value", within };
}

function isNullish(node: ts.TypeNode): boolean {
  if (node.kind === ts.SyntaxKind.UndefinedKeyword) return true;
  return ts.isLiteralTypeNode(node) && node.literal.kind === ts.SyntaxKind.NullKeyword;
}

/** `{ [key: string]: T }` alone is a map of T; a literal with properties is an object (index signatures ignored). */
function describeLiteral(node: ts.TypeLiteralNode, within: ReadonlySet<string>): Described {
  const properties = propertiesOf(node.members);
  const index = node.members.find(ts.isIndexSignatureDeclaration);
  if (properties.length === 0 && index) return { shape: "map", within, element: index.type };
  return { shape: "object", within, members: properties };
}

/** Arrays and `Record` by their element; declarations of the file by their content; anything else is a value. */
function describeReference(
  node: ts.TypeReferenceNode,
  declarations: Declarations,
  within: ReadonlySet<string>,
): Described {
  const name = ts.isIdentifier(node.typeName) ? node.typeName.text : "";
  const args = node.typeArguments ?? [];
  if ((name === "Array" || name === "ReadonlyArray") && args.length === 1)
    return { shape: "list", within, element: args[0] };
  if (name === "Record" && args.length === 2) return { shape: "map", within, element: args[1] };
  const declaration = within.has(name) ? undefined : declarations.get(name);
  if (!declaration || ts.isEnumDeclaration(declaration)) return { shape: "value", within };
  const inside = new Set([...within, name]);
  if (ts.isTypeAliasDeclaration(declaration)) return describe(declaration.type, declarations, inside);
  return { shape: "object", within: inside, members: membersOf(declaration, declarations, inside) };
}
