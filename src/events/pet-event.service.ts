import type { Caller } from '../pets/caller';
import { decodeEventCursor } from '../pets/pet-cursor';
import type { PetStatus } from '../pets/pet-status.enum';
import type { Pet } from '../pets/pet.entity';
import { validateInput } from '../validation/validate-input';
import type { PetFeed } from './pet-feed';
import type { PetEvent } from './pet-feed.repository';
import { LastEventIdInput, ListEventsArgs } from './pet-event.inputs';

/** What a follower receives: the one name the other layers use for it. */
export type { PetEvent };

/** The one event type of the feed: a pet was created (and committed). */
export const PET_CREATED_EVENT = 'pet.created';

/** An event as clients receive it (docs/events.md): `id` is its cursor; `pet` the spec's four fields. */
export interface PetEventBody {
  id: string;
  type: typeof PET_CREATED_EVENT;
  pet: Pick<Pet, 'id' | 'name' | 'categoryId' | 'status'>;
}

/** One page of the feed: `limit` and `status` after defaults, and where the next page starts (a feed has no last page). */
export interface PetEventPage {
  events: PetEventBody[];
  limit: number;
  status?: PetStatus;
  /** After the page's last event; on an empty page, the `after` it was asked with (undefined: still the beginning). */
  nextCursor?: string;
}

/** Where a stream starts, validated: after position `after`, or from now when undefined; only `status` when given. */
export interface EventStreamStart {
  after?: number;
  status?: PetStatus;
}

/** An event's client form: its cursor as `id`, its type, the pet's four fields. */
export function toEventBody({ cursor, pet }: PetEvent): PetEventBody {
  return { id: cursor, type: PET_CREATED_EVENT, pet: { id: pet.id, name: pet.name, categoryId: pet.categoryId, status: pet.status } };
}

/**
 * The change feed's operations (docs/events.md) for any surface, with the client's input unvalidated (as ListEventsArgs);
 * knows no HTTP or GraphQL.
 */
export class PetEventService {
  constructor(private readonly feed: PetFeed) {}

  /**
   * One page of the feed in feed order, from the beginning without `after`.
   * @param input - as ListEventsArgs: `{ limit?: 1-100 (default 20), status?: PetStatus, after?: event cursor }`.
   * @throws AppError BAD_USER_INPUT (a list cursor, an edited one, a bad limit or status, an unknown property); DatabaseDeadlineError (503).
   */
  async listEvents(input: unknown, caller: Caller): Promise<PetEventPage> {
    const { limit, status, after } = await validateInput(ListEventsArgs, input);
    const events = await this.feed.page(after === undefined ? 0 : decodeEventCursor(after)!, limit, status ?? undefined, caller.budget);
    const nextCursor = events.length > 0 ? events[events.length - 1].cursor : after;
    return { events: events.map(toEventBody), limit, status: status ?? undefined, nextCursor };
  }

  /**
   * Where a stream starts: `lastEventId` (the reconnecting EventSource's Last-Event-ID) wins over `input.after`, as the
   * client's latest position (WHATWG HTML "Server-sent events"); with neither, from now. Validates only: nothing is read.
   * @param input - as ListEventsArgs (`limit` checked, then ignored).
   * @throws AppError BAD_USER_INPUT naming the bad value.
   */
  async streamStart(input: unknown, lastEventId?: string): Promise<EventStreamStart> {
    const { status, after } = await validateInput(ListEventsArgs, input);
    const { lastEventId: resumed } = await validateInput(LastEventIdInput, lastEventId === undefined ? {} : { lastEventId });
    const cursor = resumed ?? after;
    return { after: cursor === undefined ? undefined : decodeEventCursor(cursor), status: status ?? undefined };
  }

  /**
   * The events after `start.after` (replayed), then each new one, in feed order, each once; from now without it. End it
   * with `return()`; it throws what the table's reads throw (DatabaseDeadlineError).
   */
  follow(start: EventStreamStart): AsyncIterableIterator<PetEvent> {
    return this.feed.follow(start);
  }
}
