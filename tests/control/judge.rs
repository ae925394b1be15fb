//! Flags: at or over the threshold flags; a flag lasts at least `hold`, then ends at the
//! first score below the threshold; a quiet flagged subject stays flagged until its hold ends;
//! an exempt (allowlisted) subject is scored but holds no flag; each flag that ends by itself
//! is told once, with the score that ended it.

use hashbrown::HashSet;
use ratewarden::control::{EndedFlag, FlagTracker, Scored};
use ratewarden::limit::KeyHash;
use std::time::Duration;

const S: u64 = 1_000_000;

fn one(subject: KeyHash, score: f64) -> [Scored; 1] {
    [Scored {
        subject,
        score,
        novel: false,
    }]
}

#[test]
fn a_flag_is_held_then_released_when_the_score_drops() {
    let mut judge = FlagTracker::default();
    let a = KeyHash(1);
    let hold = Duration::from_secs(10);
    let at = |t: u64, score: f64, judge: &mut FlagTracker| {
        judge.judge(t * S, &one(a, score), 0.8, hold, &HashSet::new())[&a].flagged(0.8, t * S)
    };
    assert!(!at(0, 0.79, &mut judge), "below the threshold");
    assert!(at(1, 0.8, &mut judge), "at the threshold");
    let held = judge.judge(5 * S, &one(a, 0.1), 0.8, hold, &HashSet::new())[&a];
    assert!(held.flagged(0.8, 5 * S), "held: 4 s of a 10 s hold");
    assert_eq!(held.abuse_score, 0.1, "the score shown is the latest");
    assert_eq!(
        held.held_until,
        11 * S,
        "the hold ends 10 s after the flag began"
    );
    assert!(
        held.flagged(0.99, 10 * S),
        "a raised threshold keeps the hold"
    );
    assert!(!held.flagged(0.99, 11 * S));
    assert!(
        held.flagged(0.05, 20 * S),
        "a lowered threshold flags at once"
    );
    assert!(at(10, 0.95, &mut judge));
    assert!(
        !at(11, 0.5, &mut judge),
        "hold over (since 1 s) and score low"
    );
    assert!(at(12, 0.9, &mut judge), "flagged again");
}

#[test]
fn a_flagged_subject_that_goes_quiet_stays_flagged_for_its_hold() {
    let mut judge = FlagTracker::default();
    let a = KeyHash(7);
    let hold = Duration::from_secs(10);
    judge.judge(0, &one(a, 0.99), 0.8, hold, &HashSet::new());
    let quiet = judge.judge(9 * S, &[], 0.8, hold, &HashSet::new());
    assert!(quiet[&a].flagged(0.8, 9 * S));
    assert_eq!(quiet[&a].abuse_score, 0.99);
    assert!(judge.ended().is_empty(), "still held");
    assert!(
        judge
            .judge(10 * S, &[], 0.8, hold, &HashSet::new())
            .is_empty()
    );
    let ended = EndedFlag {
        subject: a,
        since: 0,
        score: None,
        novel: false,
    };
    assert_eq!(judge.ended(), [ended], "ended unscored: it went quiet");
    judge.judge(11 * S, &[], 0.8, hold, &HashSet::new());
    assert!(judge.ended().is_empty(), "told once");
}

#[test]
fn a_flag_that_ends_is_told_once_with_the_score_that_ended_it() {
    let mut judge = FlagTracker::default();
    let (a, b, c) = (KeyHash(4), KeyHash(5), KeyHash(6));
    let hold = Duration::from_secs(10);
    let none = HashSet::new();
    let scored = |subject, score, novel| Scored {
        subject,
        score,
        novel,
    };
    // a drops below the threshold; b stays over it but becomes novel; c drops and is novel.
    let both = |sa: f64, late: bool| {
        [
            scored(a, sa, false),
            scored(b, 0.99, late),
            scored(c, sa, late),
        ]
    };
    judge.judge(S, &both(0.9, false), 0.8, hold, &none);
    judge.judge(5 * S, &both(0.3, false), 0.8, hold, &none);
    assert!(judge.ended().is_empty(), "held for 10 s");
    judge.judge(11 * S, &both(0.3, true), 0.8, hold, &none);
    let ended = |subject, score, novel| EndedFlag {
        subject,
        since: S,
        score: Some(score),
        novel,
    };
    let mut told = judge.ended().to_vec();
    told.sort_by_key(|f| f.subject.0);
    assert_eq!(
        told,
        [
            ended(a, 0.3, false),
            ended(b, 0.99, true),
            ended(c, 0.3, false)
        ],
        "a and c below the threshold (c's novelty is not why); b over it but novel with no second signal"
    );
    judge.judge(12 * S, &both(0.3, true), 0.8, hold, &none);
    assert!(judge.ended().is_empty(), "told once");
    judge.remove(a);
    let exempt: HashSet<KeyHash> = [b].into_iter().collect();
    judge.judge(13 * S, &both(0.9, false), 0.8, hold, &none);
    judge.judge(14 * S, &both(0.9, false), 0.8, hold, &exempt);
    assert!(
        judge.ended().is_empty(),
        "an allowlisting ends b's flag as an admin action, not as a flag that ended"
    );
}

#[test]
fn a_novel_subject_is_not_flagged_by_its_score_alone() {
    let mut judge = FlagTracker::default();
    let a = KeyHash(3);
    let hold = Duration::from_secs(10);
    let novel = [Scored {
        subject: a,
        score: 0.99,
        novel: true,
    }];
    let standing = judge.judge(0, &novel, 0.8, hold, &HashSet::new())[&a];
    assert!(!standing.flagged(0.8, 0), "novel, no second signal");
    assert_eq!(standing.abuse_score, 0.99, "the score is still shown");
    assert!(judge.begun().is_empty());
    judge.judge(S, &one(a, 0.99), 0.8, hold, &HashSet::new());
    assert_eq!(judge.begun(), &[a], "a second signal agrees: flagged");
}

#[test]
fn an_exempt_subject_is_scored_but_holds_no_flag() {
    let mut judge = FlagTracker::default();
    let a = KeyHash(1);
    let hold = Duration::from_secs(10);
    let flagged = judge.judge(0, &one(a, 0.99), 0.8, hold, &HashSet::new())[&a];
    assert_eq!(flagged.held_until, 10 * S);
    // Allowlisted while quiet: no held standing is left behind.
    let exempt: HashSet<KeyHash> = [a].into_iter().collect();
    assert!(!judge.judge(S, &[], 0.8, hold, &exempt).contains_key(&a));
    assert!(judge.flag(a).is_none());
    // Allowlisted and active: the score stays visible, no hold, nothing begins.
    let standing = judge.judge(2 * S, &one(a, 0.99), 0.8, hold, &exempt)[&a];
    assert_eq!((standing.abuse_score, standing.held_until), (0.99, 0));
    assert!(judge.flag(a).is_none() && judge.begun().is_empty());
    // The allowlisting over: a flag begins afresh, with its own hold.
    let after = judge.judge(3 * S, &one(a, 0.99), 0.8, hold, &HashSet::new())[&a];
    assert_eq!(after.held_until, 13 * S);
    assert_eq!(judge.begun(), [a]);
}
