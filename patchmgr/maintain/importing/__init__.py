"""``patchmgr import``: adopt an existing monolithic patch set as a documented, pinned series.

``sources`` reads the patch set (series.conf, per-version folder, single patches, a Dockerfile's clone
and checkout lines), ``pin`` finds the commit each patch was made against, ``split`` cuts it into
pieces (``repeated`` composes the diffs of a file the patch changes more than once, in order, as
``git apply`` does, and notes diffs edited by hand), ``plan`` classifies the pieces at the pin,
``prove`` checks with git that the series gives the monolithic patch's files byte for byte, and
``write`` writes the manifest and patch files in one journaled transaction.
"""
