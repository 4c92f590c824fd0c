/**
 * Reading the server's JSON into declared types: one decoder per shape, built from a table of
 * the shape's fields. Each field says whether the server always sends it ('required': the
 * server's model has no default) or may leave it out or send null ('optional'). The type checker
 * holds a table to its interface (a field missing, extra or of the other kind does not compile);
 * test/server.test.ts holds the tables of src/protocolResults.ts to the server's JSON schemas.
 *
 * Decoding is defensive, never throwing: an object without one of its required fields is not of
 * the shape (undefined), an optional field of the wrong type is left out, and a list keeps the
 * items that are of its item's shape.
 */

/** A value of type T read from JSON, or undefined when it is not of that shape. */
export type Decoder<T> = (value: unknown) => T | undefined;

export type Presence = 'required' | 'optional';

/** One field of a shape: how its value is read, and whether the server always sends it. */
export interface Field<V, P extends Presence = Presence> {
    readonly presence: P;
    readonly decode: Decoder<V>;
}

/** Whether property K of T is required or optional, as T declares it. */
type PresenceOf<T, K extends keyof T> = Partial<Pick<T, K>> extends Pick<T, K> ? 'optional' : 'required';

/** A property's value without the undefined of `?:` (a property typed `unknown` stays so). */
type ValueOf<V> = unknown extends V ? unknown : NonNullable<V>;

/** The table of T's fields: every property of T, each read with a decoder of its type. */
export type Fields<T> = { readonly [K in keyof T]-?: Field<ValueOf<T[K]>, PresenceOf<T, K>> };

export function required<V>(decode: Decoder<V>): Field<V, 'required'> {
    return { presence: 'required', decode };
}

export function optional<V>(decode: Decoder<V>): Field<V, 'optional'> {
    return { presence: 'optional', decode };
}

export function isRecord(value: unknown): value is Record<string, unknown> {
    return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export const str: Decoder<string> = (value) => (typeof value === 'string' ? value : undefined);
export const num: Decoder<number> = (value) => (typeof value === 'number' ? value : undefined);
export const bool: Decoder<boolean> = (value) => (typeof value === 'boolean' ? value : undefined);
/** Any JSON object, its values unread. */
export const record: Decoder<Record<string, unknown>> = (value) => (isRecord(value) ? value : undefined);
/** A value the client passes on or does not read (its shape is the server's business). */
export const opaque: Decoder<unknown> = (value) => value;

/** One of the given strings (a status, a verdict). */
export function oneOf<S extends string>(...choices: readonly S[]): Decoder<S> {
    return (value) => choices.find((choice) => choice === value);
}

function wrapped<T>(read: T | undefined): T[] {
    return read === undefined ? [] : [read];
}

/** A list: the items of the item's shape, the others left out. */
export function list<T>(item: Decoder<T>): Decoder<T[]> {
    // each read item wrapped: an item that is itself a list stays one item (flatMap would spread it)
    return (value) => (Array.isArray(value) ? value.flatMap((each) => wrapped(item(each))) : undefined);
}

/** An object of the shape `fields` describes; absent or null fields are left out, never `key: undefined`. */
export function object<T>(fields: Fields<T>): Decoder<T> {
    const table: [string, Field<unknown>][] = Object.entries(fields);
    return (value) => {
        if (!isRecord(value)) {
            return undefined;
        }
        const read: Record<string, unknown> = {};
        for (const [name, field] of table) {
            const raw = value[name];
            const decoded = raw === undefined || raw === null ? undefined : field.decode(raw);
            if (decoded !== undefined) {
                read[name] = decoded;
            } else if (field.presence === 'required') {
                return undefined;
            }
        }
        // every field of T was read with its own decoder, and each required one is present
        return read as T;
    };
}

/** Each field of a table as `name: required|optional` (what the protocol test compares). */
export function presences(fields: Record<string, Field<unknown>>): Record<string, Presence> {
    return Object.fromEntries(Object.entries(fields).map(([name, field]) => [name, field.presence]));
}
