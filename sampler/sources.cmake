# Sources of the distributed samplers (issue 5), added to the mploader library. Kept apart from
# the top-level list so that work on samplers and on the core does not collide.
